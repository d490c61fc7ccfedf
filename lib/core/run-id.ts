/** Run ids (and signal ids): what may name a run in every store, URL path and schedule name. */
export const RUN_ID = /^[A-Za-z0-9_.:\-]{1,128}$/;

/** What {@link RUN_ID} allows, as an issue's message. */
export const RUN_ID_RULE = "use 1-128 of A-Z a-z 0-9 _ . : -";
