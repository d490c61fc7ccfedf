/**
 * Incarnations of a run (`step.continueAsNew`). The first keeps its records under the run id, as
 * every journal did before incarnations existed; incarnation k > 1 under `<runId>~<k>`. Run ids
 * never contain `~`, so a journal id cannot collide with another run's.
 */
export function journalIdOf(runId: string, incarnation: number | undefined): string {
  return incarnation === undefined || incarnation <= 1 ? runId : `${runId}~${incarnation}`;
}
