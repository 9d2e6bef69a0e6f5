/**
 * Where `shoal dispatcher` takes its identity from when the flags do not say, so one StatefulSet manifest
 * serves every pod: the id from the pod name (`shoal-dispatcher-3` → `dispatcher-3`, `POD_NAME` from the
 * downward API, else `HOSTNAME`, which Kubernetes sets to the pod name), the zone from `SHOAL_ZONE` (the
 * node's `topology.kubernetes.io/zone` label through the downward API) and the node from `NODE_NAME`
 * (`spec.nodeName`).
 */
export interface DispatcherEnvDefaults {
  readonly id?: string
  readonly zone?: string
  readonly node?: string
}

export function dispatcherDefaultsFromEnv(env: Readonly<Record<string, string | undefined>>): DispatcherEnvDefaults {
  const podName = nonEmpty(env['POD_NAME']) ?? nonEmpty(env['HOSTNAME'])
  const ordinal = podName === undefined ? undefined : /-(\d+)$/.exec(podName)?.[1]
  const zone = nonEmpty(env['SHOAL_ZONE'])
  const node = nonEmpty(env['NODE_NAME'])
  return {
    ...(ordinal === undefined ? {} : { id: `dispatcher-${Number(ordinal)}` }),
    ...(zone === undefined ? {} : { zone }),
    ...(node === undefined ? {} : { node })
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim()
  return trimmed === undefined || trimmed === '' ? undefined : trimmed
}
