// Placeholder until `shoal up` lands.
export async function runUp(_argv: readonly string[]): Promise<number> {
  process.stderr.write('shoal up: not built yet\n')
  return 1
}
