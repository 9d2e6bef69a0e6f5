// The hand-over of a partition between two members of a source's group, written where both can read it: the
// metadata of the group's committed offset. A member that loses a partition with deliveries on the wire commits
// what is handled with the `draining` mark at once, lets those deliveries finish (at most REVOKE_DRAIN_MS), and
// commits again without the mark: the partition is released there. A member given a partition whose commit
// carries the mark waits for that release (at most HANDOVER_WAIT_MS, past the drain and its last commit) and
// starts exactly where it was made — so the records the former owner delivered are not delivered again.

/** The mark's prefix; what follows names the member that drains (for logs). */
const DRAINING = 'shoal-handover/1 draining '

/** The metadata of a commit made while the partition's deliveries drain. */
export function drainingMark(member: string): string {
  return `${DRAINING}${member}`
}

/** The member draining the partition, if the committed offset's metadata says one is. */
export function drainingMember(metadata: string | null | undefined): string | undefined {
  return metadata?.startsWith(DRAINING) === true ? metadata.slice(DRAINING.length) : undefined
}
