/**
 * Incarnations of a run (`step.continueAsNew`). The first keeps its records under the run id, as
 * every journal did before incarnations existed; incarnation k > 1 under `<runId>~<k>`. Run ids
 * never contain `~`, so a journal id cannot collide with another run's.
 */
/** The incarnation a journal id names (1 for the run id itself). */
export function incarnationOf(journalId: string): number {
  const at = journalId.lastIndexOf("~");
  const k = at < 0 ? 1 : Number(journalId.slice(at + 1));
  return Number.isInteger(k) && k > 1 ? k : 1;
}

/** The journal id of a run's incarnation: the run id for the first, `<runId>~<k>` after. */
export function journalIdOf(runId: string, incarnation: number | undefined): string {
  return incarnation === undefined || incarnation <= 1 ? runId : `${runId}~${incarnation}`;
}

/** The run a journal id belongs to (the id itself for the first incarnation). */
export function runIdOfJournal(journalId: string): string {
  const at = journalId.lastIndexOf("~");
  return at < 0 ? journalId : journalId.slice(0, at);
}
