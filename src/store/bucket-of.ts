/**
 * The bucket (partition of `shoal.resources` and `shoal.status`) that holds a key. Shoal computes it
 * itself rather than trusting a client's default partitioner, so every process, in any language, agrees:
 * FNV-1a (32-bit) over the key's UTF-8 bytes, modulo the bucket count. The bucket count is fixed when
 * the topics are created.
 */
export function bucketOf(key: string, buckets: number): number {
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(key, 'utf8')) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % buckets
}
