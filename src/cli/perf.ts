import { isShoalError } from '../errors/index.ts'
import {
  CONSUME_DETAIL_HEADER,
  CONSUME_HEADER,
  PERF_USAGE,
  consumePerf,
  e2ePerf,
  formatConsumeInterval,
  formatConsumeTotal,
  formatTotal,
  formatWindow,
  parsePerfArgs,
  perfOutput
} from '../perf/index.ts'
import type { ConsumeArgs, E2eArgs, PerfOutput, ProduceArgs } from '../perf/index.ts'
import { DEFAULT_PERF_PARTITIONS, ensurePerfTopic, producePerf } from '../perf/index.ts'

/** `shoal perf produce|consume|e2e`: Kafka's perf tools, and Shoal's end-to-end one. */
export async function runPerf(argv: readonly string[]): Promise<number> {
  let args
  try {
    args = parsePerfArgs(argv, process.env)
  } catch (error) {
    process.stderr.write(`shoal perf: ${(error as Error).message}\n${PERF_USAGE}`)
    return 2
  }
  if (args.kind === 'help') {
    process.stdout.write(PERF_USAGE)
    return 0
  }
  const stopping = new AbortController()
  const onSignal = () => stopping.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  // Figures go to stdout; the bar to stderr when it is a terminal, so `> file` keeps the figures only.
  const out = perfOutput(process.stdout, process.stdout.isTTY === true)
  try {
    if (args.kind === 'produce') await produce(args, out, stopping.signal)
    else if (args.kind === 'consume') await consume(args, out, stopping.signal)
    else return await e2e(args, out, stopping.signal)
    return 0
  } catch (error) {
    out.finish()
    if (stopping.signal.aborted) return 130
    process.stderr.write(`shoal perf ${args.kind}: ${isShoalError(error) ? error.message : String(error)}\n`)
    return 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

async function produce(args: ProduceArgs, out: PerfOutput, signal: AbortSignal): Promise<void> {
  if (await ensurePerfTopic(args.brokers, args.topic))
    process.stderr.write(`created topic ${args.topic} (${DEFAULT_PERF_PARTITIONS} partitions)\n`)
  const result = await producePerf({
    ...args,
    signal,
    onWindow: w => out.line(formatWindow(w)),
    onProgress: n => out.progress(n, args.numRecords, 'records acknowledged')
  })
  out.finish()
  out.line(formatTotal(result.total, result.percentiles))
}

async function consume(args: ConsumeArgs, out: PerfOutput, signal: AbortSignal): Promise<void> {
  if (!args.hideHeader) out.line(args.showDetailedStats ? CONSUME_DETAIL_HEADER : CONSUME_HEADER)
  const result = await consumePerf({
    ...args,
    reportIntervalMs: args.reportingIntervalMs,
    signal,
    ...(args.showDetailedStats ? { onInterval: i => out.line(formatConsumeInterval(i)) } : {}),
    onProgress: n => out.progress(n, args.numRecords, 'records consumed')
  })
  out.finish()
  if (result.timedOut)
    process.stderr.write(
      `WARNING: Exiting before consuming the expected number of records: timeout (${args.timeoutMs} ms) exceeded. You can use the --timeout option to increase the timeout.\n`
    )
  if (!args.showDetailedStats) out.line(formatConsumeTotal(result))
}

async function e2e(args: E2eArgs, out: PerfOutput, signal: AbortSignal): Promise<number> {
  const result = await e2ePerf({
    ...args,
    signal,
    onStage: text => process.stderr.write(`${text}\n`),
    onWindow: w => out.line(formatWindow(w)),
    onProgress: n => out.progress(n, args.numRecords, 'events at the sink')
  })
  out.finish()
  out.line(formatTotal(result.produced.total, result.produced.percentiles))
  const d = result.delivered
  const p = result.percentiles
  const rate = d.elapsedMs > 0 ? (d.records * 1000) / d.elapsedMs : 0
  out.line(
    `end-to-end: ${d.records} events delivered, ${rate.toFixed(1)} events/sec, ${d.avgLatencyMs.toFixed(2)} ms avg latency, ` +
      `${d.maxLatencyMs.toFixed(2)} ms max latency, ${Math.trunc(p.p50)} ms 50th, ${Math.trunc(p.p95)} ms 95th, ` +
      `${Math.trunc(p.p99)} ms 99th, ${Math.trunc(p.p999)} ms 99.9th; ${result.duplicates} duplicates.`
  )
  if (result.timedOut) {
    process.stderr.write(
      `shoal perf e2e: only ${d.records} of ${args.numRecords} events reached the sink before --timeout (${args.timeoutMs} ms) passed without one\n`
    )
    return 1
  }
  return 0
}
