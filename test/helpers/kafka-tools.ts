// Kafka's own command-line tools, run from the jars the embedded broker uses: an independent count of what a topic
// holds, not Shoal's client's view of it.
import { execFile } from 'node:child_process'
import { ensureKafkaJars } from '../../src/kafka/embedded/jars.ts'
import { javaExecutable } from '../../src/kafka/embedded/java.ts'

/** Runs one of Kafka's tool classes (`org.apache.kafka.tools.*`) to completion; its stdout, or an error with stderr. */
async function kafkaTool(mainClass: string, args: readonly string[]): Promise<string> {
  const libs = await ensureKafkaJars()
  return new Promise((resolve, reject) => {
    execFile(
      javaExecutable(),
      ['-Xmx256m', '-cp', `${libs}/*`, mainClass, ...args],
      { timeout: 60_000, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${mainClass} ${args.join(' ')}: ${stderr.trim() || error.message}`))
        else resolve(stdout)
      }
    )
  })
}

/**
 * Each partition's end offset (the next offset to be written), as Kafka's GetOffsetShell (`kafka-get-offsets.sh`)
 * reads it: partition → offset.
 */
export async function topicEndOffsets(bootstrap: string, topic: string): Promise<Map<number, number>> {
  const out = await kafkaTool('org.apache.kafka.tools.GetOffsetShell', [
    '--bootstrap-server',
    bootstrap,
    '--topic',
    topic,
    '--time',
    '-1'
  ])
  const ends = new Map<number, number>()
  for (const line of out.split('\n')) {
    // `topic:partition:offset`; a topic name has no colon.
    const match = /^(.+):(\d+):(\d+)$/.exec(line.trim())
    if (match?.[1] === topic) ends.set(Number(match[2]), Number(match[3]))
  }
  if (ends.size === 0) throw new Error(`GetOffsetShell named no partition of ${topic}: ${out.trim()}`)
  return ends
}
