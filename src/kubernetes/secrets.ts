// Secrets the Kubernetes way: a claimed source's `spec.net` refers to Kubernetes Secrets by `secretKeyRef`; the
// operator copies each into Shoal's own Secrets (sealed in its log, docs/secrets.md) and again when it changes, so a
// rotated credential reaches the source's Kafka clients.

/** The names of the Secrets a spec's `net` refers to (any `secretKeyRef.name` under it), each once. */
export function secretNamesOf(spec: unknown): string[] {
  const names = new Set<string>()
  const walk = (value: unknown, depth: number): void => {
    if (typeof value !== 'object' || value === null || depth > 8) return
    const ref = (value as { secretKeyRef?: { name?: unknown } }).secretKeyRef
    if (typeof ref?.name === 'string' && ref.name !== '') names.add(ref.name)
    for (const child of Object.values(value)) walk(child, depth + 1)
  }
  walk((spec as { net?: unknown } | undefined)?.net, 0)
  return [...names].sort()
}

/** A Kubernetes Secret as the operator reads it. */
export interface KubeSecret {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string }
  readonly type?: string
  readonly data?: Readonly<Record<string, string>>
}

/** The Shoal Secret a Kubernetes Secret becomes: its name, type and base64 data, nothing else. */
export function shoalSecret(secret: KubeSecret, namespace: string, name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    ...(secret.type === undefined ? {} : { type: secret.type }),
    data: { ...secret.data }
  }
}
