/** Usage text of `shoal` and of each resource command; docs/cli.md says the same at length. */

const connection = `Connection flags:
  -s, --server URL            the Shoal API (default: $SHOAL_SERVER, else http://127.0.0.1:8080)
      --request-timeout DUR   give up on a request after DUR (30s, 2m, 500ms; 0 = never; default 30s)
      --token TOKEN           the bearer token of a multi-tenant API (default: $SHOAL_TOKEN)
      --certificate-authority FILE
                              a PEM CA to trust besides the system's, for an https --server (default: $SHOAL_CA)
  -h, --help                  show this help`

export const usage = {
  shoal: `shoal runs event sources (KafkaSource, PingSource) on an elastic pool of dispatchers.

Usage: shoal COMMAND [ARGS] [FLAGS]

Run Shoal:
  up          start Kafka (unless given one), a controller and dispatchers on this machine
  controller  run one control-plane replica (resource API, reconcilers, scheduler)
  kafka       run a development Apache Kafka broker ('shoal kafka start')

Work with resources (like kubectl):
  apply       create or update resources from manifests
  get         list resources, or show some
  describe    show one resource in detail
  delete      delete resources by name or by manifest

Operate:
  cordon      stop placing work on a dispatcher and move its work away ('uncordon' undoes it)
  scale       change a KafkaSource's consumers
  pause       stop a source's delivery, keeping its position ('resume' carries on)
  offsets     show a KafkaSource's committed offsets and lag; --reset moves them while paused
  rebalance   show, and with --approve apply, the scheduler's rebalance proposal
  dispatcher  run one data-plane process
  sink        an event display: print every CloudEvent it receives
  perf        measure Kafka and Shoal: 'shoal perf produce|consume|e2e' (like Kafka's perf tools)

Other:
  version     print the client and server versions
  help        show this help, or a command's ('shoal help get')

Resource types: kafkasources (ks), pingsources (ps), dispatchers (disp), all; 'shoal get controllers' too.
Run 'shoal COMMAND --help' for a command's flags.

${connection}
`,
  apply: `Create or update resources from manifests (kubectl apply semantics: the last applier wins).

Usage: shoal apply -f FILE|DIR|- [-f …] [-n NAMESPACE]

Each object is created; if it exists, it is replaced by the manifest's spec, labels and annotations.
Prints "<kind>/<name> created|configured|unchanged" per object; an object that fails does not stop
the others, and the exit code is 1 if any failed.

Flags:
  -f, --filename PATH         a file, a directory (its *.yaml, *.yml, *.json files) or - for stdin; repeatable
  -n, --namespace NS          namespace for objects that name none (default "default")
${connection}
`,
  get: `List resources, or show some.

Usage: shoal get TYPE[,TYPE…] [NAME…] [FLAGS]
       shoal get TYPE/NAME … [FLAGS]
       shoal get all [FLAGS]

Flags:
  -n, --namespace NS          the namespace (default "default")
  -A, --all-namespaces        list across all namespaces
  -l, --selector SELECTOR     filter by labels: a=b, a!=b, a, !a, a in (x,y), a notin (x); comma = and
  -o, --output FORMAT         wide | yaml | json | name (default: a table)
${connection}
`,
  describe: `Show resources in detail: metadata, spec, status and conditions.

Usage: shoal describe TYPE [NAME…] [FLAGS]
       shoal describe TYPE/NAME … [FLAGS]

Without a NAME, describes every resource of the type (filtered by -l).

Flags:
  -n, --namespace NS          the namespace (default "default")
  -A, --all-namespaces        across all namespaces (without NAME)
  -l, --selector SELECTOR     filter by labels (without NAME)
${connection}
`,
  delete: `Delete resources by name or by manifest.

Usage: shoal delete TYPE NAME [NAME…] [FLAGS]
       shoal delete TYPE/NAME … [FLAGS]
       shoal delete -f FILE|DIR|- [-f …] [FLAGS]

Flags:
  -f, --filename PATH         delete what these manifests describe; repeatable
  -n, --namespace NS          the namespace (default "default", or each manifest's own)
      --ignore-not-found      treat a resource that does not exist as deleted
${connection}
`,
  version: `Print the client version and, when the API answers, the server's.

Usage: shoal version [--client] [-o json|yaml]

Flags:
      --client                the client version only; no request
  -o, --output FORMAT         json | yaml
${connection}
`,
  cordon: `Mark dispatchers unschedulable: nothing new is placed on them and what runs there moves elsewhere.
The mark is a Dispatcher resource in the store, so it survives restarts.

Usage: shoal cordon NAME...      (e.g. shoal cordon dispatcher-3)

${connection}
`,
  uncordon: `Mark dispatchers schedulable again.

Usage: shoal uncordon NAME...

${connection}
`,
  scale: `Change how many consumers (vreplicas) a KafkaSource runs.

Usage: shoal scale kafkasource NAME --consumers N [-n NAMESPACE]

Flags:
      --consumers N           the new spec.consumers (--replicas is accepted too)
  -n, --namespace NS          the source's namespace (default: default)
${connection}
`,
  pause: `Pause a source: nothing more is delivered and nothing is lost. Its consumers finish what is in flight,
commit and leave the group, so its position is its committed offsets; its autoscaler holds. The pause is the
annotation shoal.dev/paused=true on the source (an apply of a manifest without it resumes the source).

Usage: shoal pause <kind> NAME [-n NAMESPACE]      (e.g. shoal pause kafkasource orders)

Flags:
  -n, --namespace NS          the source's namespace (default: default)
${connection}
`,
  resume: `Resume a paused source: it carries on from its committed offsets.

Usage: shoal resume <kind> NAME [-n NAMESPACE]

Flags:
  -n, --namespace NS          the source's namespace (default: default)
${connection}
`,
  offsets: `Show a KafkaSource's consumer-group offsets: committed offset, last stable offset and lag per partition.
With --reset, move the committed offsets first; only while the source is paused (Kafka takes new offsets only
from a group without members).

Usage: shoal offsets kafkasource NAME [--reset earliest|latest|TIME] [-o json|yaml] [-n NAMESPACE]

Flags:
      --reset TO              earliest | latest | an ISO-8601 time (2025-01-31T12:00:00Z) | epoch milliseconds:
                              the first offset at or after that time (the end where there is none)
  -o, --output FORMAT         json | yaml
  -n, --namespace NS          the source's namespace (default: default)
${connection}
`,
  rebalance: `Show the scheduler's rebalance proposal: the balancedness score (0-100) before and after, the
moves, and the revision it was computed from. Nothing moves until it is approved.

Usage: shoal rebalance [--approve [--revision R]]

Flags:
      --approve               apply the proposal
      --revision R            apply only if the scheduler is still at revision R (default: the one just shown)
${connection}
`
} as const

export type HelpTopic = keyof typeof usage

export function isHelpTopic(name: string): name is HelpTopic {
  return Object.hasOwn(usage, name)
}
