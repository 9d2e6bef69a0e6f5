// Placeholder until the embedded Kafka lands.
export async function runKafkaCommand(_argv: readonly string[]): Promise<number> {
  process.stderr.write('shoal kafka: not built yet\n')
  return 1
}
