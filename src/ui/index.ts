export { DEFAULT_MAX_HISTORIES, buildSnapshot, historyPoints } from './snapshot.ts'
export type {
  UiCondition,
  UiDispatcher,
  UiDispatcherInput,
  UiPoint,
  UiSnapshot,
  UiSnapshotInput,
  UiSource,
  UiSourceInput,
  UiVReplicas,
  UiZone
} from './snapshot.ts'
export { UiServer } from './ui-server.ts'
export type { UiServerOptions } from './ui-server.ts'
