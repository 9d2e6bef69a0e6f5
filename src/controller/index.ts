// Placeholder until the controller lands.
export async function runControllerCommand(_argv: readonly string[]): Promise<number> {
  process.stderr.write('shoal controller: not built yet\n')
  return 1
}
