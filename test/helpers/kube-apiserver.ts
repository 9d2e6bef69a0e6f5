// A real Kubernetes API for tests: etcd and kube-apiserver, built from the Go module proxy by
// scripts/kube-apiserver.sh (once per machine, into the cache), started on free ports for one test file. No
// kubelets and no controller manager: objects, watches, status, finalizers, RBAC and TokenRequest are the API
// server's own, which is what the operator talks to (as controllers are tested with envtest).
import { execFile, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { eventually } from './wait.ts'

export interface ApiServer {
  /** `https://127.0.0.1:PORT` */
  readonly url: string
  /** The API server's serving certificate (self-signed), PEM: what a client trusts. */
  readonly caCert: string
  /** A `system:masters` token. */
  readonly adminToken: string
  /** A kubeconfig file for the admin. */
  readonly kubeconfig: string
  /** kubectl of the same release, built beside the API server. */
  readonly kubectl: string
  /**
   * Resolves once every CRD is established and its objects answer: for a moment after a CRD is created, as after a
   * start, the API server refuses them with 429 ("storage is (re)initializing") though /readyz says ok.
   */
  customResourcesServed(): Promise<void>
  /** Stops the API server and starts it again on the same port, over the same etcd; resolves once it serves again. */
  restart(): Promise<void>
  stop(): Promise<void>
}

const root = new URL('../../', import.meta.url).pathname
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** A kubeconfig file for `user` with `token`, trusting the API server's certificate. */
export async function writeKubeconfig(
  path: string,
  api: { readonly url: string; readonly caCert: string },
  user: string,
  token: string
): Promise<void> {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'test',
        cluster: { server: api.url, 'certificate-authority-data': Buffer.from(api.caCert).toString('base64') }
      }
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user } }],
    'current-context': 'test'
  }
  await writeFile(path, JSON.stringify(config), { mode: 0o600 })
}

/** Where scripts/kube-apiserver.sh built the binaries (it builds them first if it must). */
async function binaries(): Promise<{ apiserver: string; etcd: string; kubectl: string }> {
  const output = await new Promise<string>((resolve, reject) => {
    execFile('bash', [join(root, 'scripts/kube-apiserver.sh')], { maxBuffer: 1 << 20 }, (error, stdout, stderr) =>
      error
        ? reject(
            new Error(
              `kube-apiserver and etcd are not built (run bash scripts/kube-apiserver.sh --prepare): ${stderr || error.message}`
            )
          )
        : resolve(stdout)
    )
  })
  const value = (name: string) => new RegExp(`^${name}=(.+)$`, 'm').exec(output)?.[1]
  const apiserver = value('SHOAL_KUBE_APISERVER')
  const etcd = value('SHOAL_ETCD')
  const kubectl = value('SHOAL_KUBECTL')
  if (!apiserver || !etcd || !kubectl) throw new Error(`scripts/kube-apiserver.sh named no binaries: ${output}`)
  return { apiserver, etcd, kubectl }
}

async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await new Promise(resolve => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

function start(command: string, args: readonly string[], name: string): { child: ChildProcess; output: () => string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  child.once('exit', () => running.delete(child))
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  child.once('error', error => (output += `\n${name}: ${error.message}`))
  return { child, output: () => output }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

interface CustomResourceDefinitionList {
  readonly items: readonly {
    readonly spec: {
      readonly group: string
      readonly names: { readonly plural: string }
      readonly versions: readonly { readonly name: string; readonly storage: boolean }[]
    }
    readonly status?: { readonly conditions?: readonly { readonly type: string; readonly status: string }[] }
  }[]
}

/** Whether every CRD is established and answers a list at its storage version (a refusal is thrown, to be said at a deadline). */
async function served(url: string, token: string, dispatcher: Agent): Promise<boolean> {
  const get = async (path: string): Promise<unknown> => {
    const answer = await request(`${url}${path}`, { headers: { authorization: `Bearer ${token}` }, dispatcher })
    const body = await answer.body.text()
    if (answer.statusCode !== 200) throw new Error(`GET ${path}: ${answer.statusCode} ${body}`)
    return JSON.parse(body)
  }
  const crds = (await get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions')) as CustomResourceDefinitionList
  for (const crd of crds.items) {
    if (!crd.status?.conditions?.some(c => c.type === 'Established' && c.status === 'True')) return false
    const version = crd.spec.versions.find(v => v.storage)?.name
    if (version !== undefined) await get(`/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}?limit=1`)
  }
  return true
}

/**
 * Starts etcd and kube-apiserver for one test file; `stop()` removes everything they wrote. A free port can be taken
 * by another process between being found and being bound (test files start side by side): a start that finds its
 * etcd or API server gone, or another API server on its port, is made again on other ports.
 */
export async function startApiServer(): Promise<ApiServer> {
  const built = await binaries()
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(built)
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}

async function startOnce({
  apiserver,
  etcd,
  kubectl
}: {
  apiserver: string
  etcd: string
  kubectl: string
}): Promise<ApiServer> {
  const dir = await mkdtemp(join(tmpdir(), 'shoal-kube-'))
  const [clientPort, peerPort, securePort] = [await freePort(), await freePort(), await freePort()]
  const etcdUrl = `http://127.0.0.1:${clientPort}`
  const peerUrl = `http://127.0.0.1:${peerPort}`
  const etcdProcess = start(
    etcd,
    [
      '--name=test',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=test=${peerUrl}`,
      '--unsafe-no-fsync',
      '--log-level=warn'
    ],
    'etcd'
  )
  // The service accounts' signing key, and the tokens of the token file: the admin is system:masters.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const adminToken = randomBytes(24).toString('hex')
  await writeFile(join(dir, 'tokens.csv'), `${adminToken},admin,admin,"system:masters"\n`)
  const args = [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${securePort}`,
    `--cert-dir=${join(dir, 'certs')}`,
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    `--service-account-key-file=${join(dir, 'sa.key')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    '--service-cluster-ip-range=10.96.0.0/24',
    // Its own keys in etcd, whatever else shares it.
    `--etcd-prefix=/registry-${randomBytes(6).toString('hex')}`,
    '--anonymous-auth=false',
    // The kubernetes Service's endpoints would name the advertised address, which may not be loopback.
    '--endpoint-reconciler-type=none',
    '--v=0'
  ]
  let current = start(apiserver, args, 'kube-apiserver')
  const url = `https://127.0.0.1:${securePort}`
  let agent: Agent | undefined
  const customResourcesServed = async () => {
    const trusting = agent
    if (trusting === undefined) throw new Error('the API server has not started')
    await eventually(
      () => served(url, adminToken, trusting),
      30_000,
      () => `the custom resources served at ${url}: ${current.output()}`,
      50
    )
  }
  const ready = async () => {
    const caCert = await eventually(
      () => readFile(join(dir, 'certs', 'apiserver.crt'), 'utf8').catch(() => undefined),
      60_000,
      () => `the API server's certificate: ${current.output()}`
    )
    const trusting = (agent ??= new Agent({ connect: { ca: caCert } }))
    let broken: string | undefined
    await eventually(
      async () => {
        if (current.child.exitCode !== null || current.child.signalCode !== null) broken = 'kube-apiserver exited'
        else if (etcdProcess.child.exitCode !== null) broken = 'etcd exited'
        if (broken !== undefined) return true
        const answer = await request(`${url}/readyz`, {
          headers: { authorization: `Bearer ${adminToken}` },
          dispatcher: trusting
        })
        const body = await answer.body.text()
        // Another API server on this port would not know this token.
        if (answer.statusCode === 401) broken = 'another API server answers on its port'
        return broken !== undefined || (answer.statusCode === 200 && body.trim() === 'ok')
      },
      90_000,
      () => `the API server ready at ${url}: ${current.output()} / etcd: ${etcdProcess.output()}`,
      200
    )
    if (broken !== undefined) throw new Error(`${broken}: ${current.output()} / etcd: ${etcdProcess.output()}`)
    // /readyz says ok before the custom resources' storage does.
    await customResourcesServed()
    return caCert
  }
  let caCert: string
  try {
    caCert = await ready()
  } catch (error) {
    await stopChild(current.child)
    await stopChild(etcdProcess.child)
    await agent?.close()
    await rm(dir, { recursive: true, force: true })
    throw error
  }
  const kubeconfig = join(dir, 'admin.kubeconfig')
  await writeKubeconfig(kubeconfig, { url, caCert }, 'admin', adminToken)
  return {
    url,
    caCert,
    adminToken,
    kubeconfig,
    kubectl,
    customResourcesServed,
    async restart() {
      await stopChild(current.child)
      current = start(apiserver, args, 'kube-apiserver')
      await ready()
    },
    async stop() {
      await stopChild(current.child)
      await stopChild(etcdProcess.child)
      await agent?.close()
      await rm(dir, { recursive: true, force: true })
    }
  }
}
