import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { closePlanes } from '../../src/dispatcher/data-plane.ts'
import type { SourcePlane } from '../../src/plane/index.ts'

function fakePlane(kind: string, closed: string[], fails?: Error): SourcePlane {
  return {
    kind,
    start: () => Promise.resolve(),
    apply: () => {},
    close: async () => {
      closed.push(kind)
      if (fails !== undefined) throw fails
    }
  }
}

describe('closing the data plane', () => {
  it('closes every plane and then the shared services when a plane fails to close, and rethrows the first failure', async () => {
    // Before, the first plane whose close rejected left the planes after it and the services (the Deliverer, the
    // resources reader) open, and the dispatcher was never closed.
    const closed: string[] = []
    const first = new Error('PingSource plane failed to close')
    const planes = [
      fakePlane('KafkaSource', closed, new Error('KafkaSource plane failed to close')),
      fakePlane('PingSource', closed, first)
    ]
    const services = {
      close: async () => {
        closed.push('services')
      }
    }
    await assert.rejects(closePlanes(planes, services), first)
    assert.deepEqual(closed, ['PingSource', 'KafkaSource', 'services'])
  })

  it('closes the planes, the last kind first, then the services', async () => {
    const closed: string[] = []
    await closePlanes([fakePlane('KafkaSource', closed), fakePlane('PingSource', closed)], {
      close: async () => {
        closed.push('services')
      }
    })
    assert.deepEqual(closed, ['PingSource', 'KafkaSource', 'services'])
  })
})
