/**
 * Which `Host` names the dev server answers to. A web page on another site can point its own
 * DNS name at this machine (DNS rebinding) and then read the server same-origin; the Host header
 * still carries the page's name, so checking it against the names this server is really reached
 * by closes that door, on every bind address, not only on loopback.
 */
import { networkInterfaces } from "node:os";

/** Names that always mean this machine and that no outside DNS can claim. */
const LOCAL_NAMES = ["localhost", "127.0.0.1", "::1"];
const WILDCARDS = new Set(["0.0.0.0", "::", ""]);

/**
 * A predicate over `Host` headers: true for the bind address, the localhost names, every
 * interface address when bound to a wildcard (`0.0.0.0`, `::`), and `allowedHosts`.
 * Ports are ignored; names compare case-insensitively, without a trailing dot.
 *
 * @example
 * ```ts
 * const served = servedHosts("0.0.0.0", ["devbox.lan"]);
 * served("192.168.1.20:8787"); // true when that is one of this machine's addresses
 * served("attacker.example");  // false
 * ```
 */
export function servedHosts(bound: string, allowedHosts: readonly string[] = []): (host: string | undefined) => boolean {
  const wildcard = WILDCARDS.has(normalize(bound));
  // A wildcard is no name anything is reached by (a browser's `0.0.0.0` is not this server's name).
  const fixed = new Set([...LOCAL_NAMES, ...(wildcard ? [] : [normalize(bound)]), ...allowedHosts.map(normalize)]);
  return (host) => {
    const name = hostnameOf(host);
    if (name === "") return false;
    if (fixed.has(name)) return true;
    // Read at request time: interfaces come and go (Wi-Fi, VPN) while the server runs.
    return wildcard && interfaceAddresses().has(name);
  };
}

function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(normalize(a.address));
  return out;
}

/** The name part of a Host header: `[::1]:8787` → `::1`, `Example.COM.:80` → `example.com`. */
function hostnameOf(host: string | undefined): string {
  if (!host) return "";
  const h = host.trim();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end < 0 ? "" : normalize(h.slice(1, end));
  }
  // More than one colon and no brackets: a bare IPv6 address, which a Host header may not carry.
  if (h.indexOf(":") !== h.lastIndexOf(":")) return "";
  return normalize(h.split(":")[0] ?? "");
}

function normalize(name: string): string {
  return name.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
}
