/**
 * Runs each close in order, whether or not the ones before failed — a part whose close rejects must not keep
 * the parts after it open — and rethrows the first failure once all have run.
 */
export async function closeInOrder(closes: ReadonlyArray<() => Promise<void>>): Promise<void> {
  let failed: { readonly error: unknown } | undefined
  for (const close of closes) {
    try {
      await close()
    } catch (error) {
      failed ??= { error }
    }
  }
  if (failed !== undefined) throw failed.error
}
