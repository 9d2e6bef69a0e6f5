// A controller and one dispatcher with its data plane, in this process, on the run's Kafka: what a test needs to
// drive a source through the API and watch it deliver and report (heartbeats, status, metrics).
import { startController } from '../../src/controller/index.ts'
import { startDataPlane, startDispatcher } from '../../src/dispatcher/index.ts'
import { createLogger } from '../../src/log/index.ts'
import { brokers } from './kafka.ts'

export interface OneDispatcher {
  readonly controller: Awaited<ReturnType<typeof startController>>
  readonly dispatcher: Awaited<ReturnType<typeof startDispatcher>>
  readonly plane: Awaited<ReturnType<typeof startDataPlane>>
  /** The API's KafkaSources in namespace default. */
  readonly kafkaSources: string
  /** Closes the controller, the data plane and the dispatcher, in that order. */
  close(): Promise<void>
}

/** Starts them under `prefix` (buckets 2; the dispatcher is `dispatcher-0` in zone a, 4 slots). */
export async function startOneDispatcher(prefix: string): Promise<OneDispatcher> {
  const controller = await startController({
    brokers: brokers(),
    port: 0,
    prefix,
    buckets: 2,
    logger: createLogger('test', 'error')
  })
  const dispatcher = await startDispatcher({
    brokers: brokers(),
    prefix,
    buckets: 2,
    id: 'dispatcher-0',
    zone: 'a',
    node: 'n',
    capacity: 4
  })
  const plane = await startDataPlane(
    dispatcher,
    { brokers: brokers(), prefix },
    { serviceUrlTemplate: 'http://127.0.0.1/{name}', log: () => undefined }
  )
  return {
    controller,
    dispatcher,
    plane,
    kafkaSources: `${controller.url}/apis/sources.knative.dev/v1beta1/namespaces/default/kafkasources`,
    close: async () => {
      await controller.close()
      await plane.close()
      await dispatcher.close()
    }
  }
}
