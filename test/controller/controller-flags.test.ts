import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, it } from 'node:test'
import { shoalBin } from '../helpers/processes.ts'

/** `shoal controller ARGS`: refused flags exit 2 before anything connects, so no broker is needed. */
function controller(...args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise(resolve => {
    const env = { ...process.env }
    delete env['KUBERNETES_SERVICE_HOST']
    delete env['KUBECONFIG']
    const argv = [shoalBin, 'controller', '--kafka', '127.0.0.1:1', ...args]
    execFile(process.execPath, argv, { env }, (error, _out, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr })
    })
  })
}

describe('shoal controller flags', () => {
  it('refuses a bad --session-timeout, naming the flag and its bounds', async () => {
    for (const value of ['1s', '6', 'soon', '31m']) {
      const { code, stderr } = await controller('--session-timeout', value)
      assert.equal(code, 2, stderr)
      assert.match(stderr, new RegExp(`--session-timeout must be a duration from 2s to 30m .*not "${value}"`))
    }
  })

  it('refuses a --liveness-timeout outside what dispatchers take, naming the flag and its bounds', async () => {
    for (const value of ['100ms', '1h']) {
      const { code, stderr } = await controller('--liveness-timeout', value)
      assert.equal(code, 2, stderr)
      assert.match(stderr, /--liveness-timeout: the liveness timeout must be from \S+ s to \S+ s/)
    }
  })

  it('refuses bad pool flags', async () => {
    const bounds = await controller('--dispatchers', '5..2')
    assert.equal(bounds.code, 2)
    assert.match(bounds.stderr, /--dispatchers: MIN \(5\) is above MAX \(2\)/)
    const alone = await controller('--statefulset', 'shoal/shoal-dispatcher')
    assert.equal(alone.code, 2)
    assert.match(alone.stderr, /--statefulset needs --dispatchers MIN\.\.MAX/)
    const ref = await controller('--dispatchers', '1..4', '--statefulset', 'shoal-dispatcher')
    assert.equal(ref.code, 2)
    assert.match(ref.stderr, /--statefulset must be NAMESPACE\/NAME/)
    // Outside a pod, without the API's address, it stops before it serves anything.
    const outside = await controller('--dispatchers', '1..4', '--statefulset', 'shoal/shoal-dispatcher')
    assert.equal(outside.code, 1)
    assert.match(
      outside.stderr,
      /--statefulset needs the Kubernetes API: give --kubeconfig FILE, set KUBECONFIG, or run in a pod \(KUBERNETES_SERVICE_HOST is not set\)/
    )
  })

  it('refuses bad Kubernetes flags, naming them', async () => {
    const claim = await controller('--kubernetes', '--kubernetes-claim', 'mine')
    assert.equal(claim.code, 2)
    assert.match(claim.stderr, /--kubernetes-claim must be "labelled" or "all", not "mine"/)
    const alone = await controller('--kubernetes-claim', 'all')
    assert.equal(alone.code, 2)
    assert.match(alone.stderr, /--kubernetes-claim needs --kubernetes/)
    const config = await controller('--kubeconfig', '/nowhere')
    assert.equal(config.code, 2)
    assert.match(config.stderr, /--kubeconfig needs --kubernetes or --statefulset/)
    const missing = await controller('--kubernetes', '--kubeconfig', '/nowhere/kubeconfig')
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /--kubeconfig \/nowhere\/kubeconfig: .*no such file/i)
    const outside = await controller('--kubernetes')
    assert.equal(outside.code, 1)
    assert.match(outside.stderr, /--kubernetes needs the Kubernetes API: give --kubeconfig FILE/)
  })
})
