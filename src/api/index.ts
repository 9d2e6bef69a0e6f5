export {
  KafkaSourceKind,
  PingSourceKind,
  apiVersionOf,
  kindByApiVersion,
  kindByPath,
  kinds,
  lookupKind,
  resourceKey
} from './kinds.ts'
export type { KindInfo } from './kinds.ts'
