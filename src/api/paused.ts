/**
 * A paused source: the annotation `shoal.dev/paused: "true"`. It is desired state, so it lives on the resource
 * (as `kubectl rollout pause` sets a field on a Deployment), survives every restart and failover, and an apply of
 * a manifest without it resumes the source. A paused source gets no vreplicas: its members drain, commit and
 * leave the group, so its position is its committed offsets; its autoscaler holds.
 */
export const PAUSED_ANNOTATION = 'shoal.dev/paused'

export function isPaused(metadata: { readonly annotations?: Readonly<Record<string, string>> }): boolean {
  return metadata.annotations?.[PAUSED_ANNOTATION] === 'true'
}
