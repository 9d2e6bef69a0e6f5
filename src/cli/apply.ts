import { validateResource } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { ApiClient } from './api-client.ts'
import { statusText } from './api-status.ts'
import type { ApiStatus } from './api-status.ts'
import { connectionFlags, connectionFrom, namespaceFrom, parseFlags, usageError } from './flags.ts'
import { usage } from './help.ts'
import type { CliIo } from './io.ts'
import { manifestTarget } from './manifest-target.ts'
import { readManifests } from './manifests.ts'
import { desiredStateOf, isObject, nameOf, objectReference, resourceVersionOf, sameDesiredState } from './resources.ts'
import type { JsonObject } from './resources.ts'

const flags = {
  ...connectionFlags,
  filename: { type: 'string', short: 'f', multiple: true },
  namespace: { type: 'string', short: 'n' }
} as const

/** What applying one object did. */
export type ApplyOutcome =
  | { readonly kind: 'created' | 'configured' | 'unchanged'; readonly name: string }
  | { readonly kind: 'failed'; readonly message: string }

/** How many times an update is retried when someone else changes the resource between our read and write. */
const maxAttempts = 5

/**
 * The manifest as the server will store it, defaults filled in by the API's own rules, so re-applying an
 * unchanged manifest sends no write. A manifest the rules reject is returned as it is: the server's answer
 * to it is the error the user sees.
 */
function withDefaults(body: JsonObject): unknown {
  try {
    return validateResource(body)
  } catch {
    return body
  }
}

/** `shoal apply` */
export async function runApply(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(args, flags)
  if (values.help === true) {
    io.stdout.write(usage.apply)
    return 0
  }
  const files = values.filename ?? []
  if (files.length === 0) throw usageError('-f is required (a file, a directory, or - for stdin)')
  const [unexpected] = positionals
  if (unexpected !== undefined) throw usageError(`unexpected argument "${unexpected}"; give manifests with -f`)
  const namespace = { value: namespaceFrom(values.namespace), explicit: values.namespace !== undefined }
  const client = new ApiClient(connectionFrom(values, io), io.signal)

  const read = await readManifests(files, io.readStdin)
  for (const error of read.errors) io.stderr.write(`error: ${error}\n`)
  let failed = read.errors.length > 0
  for (const { source, value } of read.objects) {
    const target = manifestTarget(value, source, namespace)
    if (!target.ok) {
      io.stderr.write(`error: ${target.message}\n`)
      failed = true
      continue
    }
    const body = desiredStateOf(value, target.namespace)
    const outcome = await applyObject(client, target.kind, target.namespace, body, source)
    if (outcome.kind === 'failed') {
      io.stderr.write(`${outcome.message}\n`)
      failed = true
    } else {
      io.stdout.write(`${objectReference(target.kind, outcome.name)} ${outcome.kind}\n`)
    }
  }
  return failed ? 1 : 0
}

/**
 * Creates the object, or replaces the live one's spec, labels and annotations with the manifest's (the last
 * applier wins, as with kubectl apply). The replacement is a compare-and-set on the resourceVersion just
 * read, retried on conflict, so "unchanged" is decided against the very version that was replaced — unless the
 * manifest names a `metadata.resourceVersion` itself: then that is the precondition, and a live object at
 * another version is a conflict reported as it is (as kubectl does), never overwritten. The
 * outcome is "unchanged" when nothing a user applies differs — including when the only difference was
 * defaults the server fills in, which the server's answer to the update reveals.
 */
export async function applyObject(
  client: ApiClient,
  kind: KindInfo,
  namespace: string,
  body: JsonObject,
  source: string
): Promise<ApplyOutcome> {
  const name = nameOf(body)
  const failure = (status: ApiStatus): ApplyOutcome => ({
    kind: 'failed',
    message:
      status.reason === 'Invalid'
        ? `error: ${statusText(status)}`
        : `Error from server (${status.reason}): error when applying ${kind.kind} ${namespace}/${name ?? ''} from ${source}: ${statusText(status)}`
  })
  // A version the manifest names is the user's precondition.
  const pinned = resourceVersionOf(body)
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const created = await client.create(kind, namespace, body)
    if (created.ok) return { kind: 'created', name: nameOf(created.body) ?? name ?? '' }
    if (created.status.reason !== 'AlreadyExists' || name === undefined) return failure(created.status)

    const live = await client.get(kind, namespace, name)
    if (!live.ok) {
      if (live.status.reason === 'NotFound') continue // deleted since: create it again
      return failure(live.status)
    }
    if (sameDesiredState(withDefaults(body), live.body)) return { kind: 'unchanged', name }
    const resourceVersion = pinned ?? resourceVersionOf(live.body)
    const metadata = {
      ...(isObject(body['metadata']) ? body['metadata'] : {}),
      ...(resourceVersion === undefined ? {} : { resourceVersion })
    }
    const replaced = await client.replace(kind, namespace, name, { ...body, metadata })
    if (replaced.ok) {
      return { kind: sameDesiredState(replaced.body, live.body) ? 'unchanged' : 'configured', name }
    }
    if (pinned !== undefined) return failure(replaced.status)
    if (replaced.status.reason !== 'Conflict' && replaced.status.reason !== 'NotFound') return failure(replaced.status)
  }
  return {
    kind: 'failed',
    message: `error: ${kind.kind} ${namespace}/${name ?? ''} from ${source} kept changing while it was applied; gave up after ${maxAttempts} attempts`
  }
}
