import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { Agent, fetch as undiciFetch } from 'undici'
import { usageError } from './flags.ts'

const agents = new Map<string, Agent>()

/**
 * fetch that trusts the system CAs plus the PEM CA file given with `--certificate-authority` (undici's fetch,
 * since Node's built-in one takes no CA). One agent per file for the process.
 */
export async function trustingFetch(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  caFile: string
): Promise<Response> {
  let agent = agents.get(caFile)
  if (agent === undefined) {
    let ca: string
    try {
      ca = readFileSync(caFile, 'utf8')
    } catch (error) {
      throw usageError(`--certificate-authority ${caFile} cannot be read: ${(error as Error).message}`)
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
      throw usageError(`--certificate-authority ${caFile} holds no PEM certificate`)
    }
    agent = new Agent({ connect: { ca: [...rootCertificates, ca] } })
    agents.set(caFile, agent)
  }
  return await undiciFetch(url, { ...init, dispatcher: agent })
}
