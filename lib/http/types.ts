/**
 * The transport-neutral HTTP request and response. Every host (the Lambda Function URL entry,
 * the local dev server, a test) turns its own request into an {@link HttpRequest}, calls the
 * handler, and writes the {@link HttpResponse} back.
 */

/** A request as any host receives it. */
export interface HttpRequest {
  /** Upper- or lower-case; the handler compares case-insensitively. */
  method: string;
  /** The raw path, without the query string, e.g. `/runs/order-8472`. */
  path: string;
  /** Query parameters; the routes ignore them (they are not covered by request signatures). */
  query: Readonly<Record<string, string | undefined>>;
  /** Header names lower-cased. */
  headers: Readonly<Record<string, string | undefined>>;
  /** The raw body as received, decoded as UTF-8; `""` when there is none. */
  body: string;
}

/** What the handler answers: always a JSON body (or the dev server's HTML dashboard). */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The neutral handler every host calls. */
export type HttpHandler = (req: HttpRequest) => Promise<HttpResponse>;
