/**
 * Death notices between the workers of one journal file, without polling.
 *
 * Each runtime listens on a Unix socket in a folder beside the journal (`<journal>.workers/`)
 * and connects to every socket already there, so each pair of workers shares a connection.
 * When a process dies, however it dies (SIGKILL, OOM, a crash), the kernel closes its sockets
 * at once and every peer sees its connection end: that is the notice. It says only "look now";
 * whether the peer's leases may be taken is decided by checking its process (owner-life.ts), so
 * a worker that merely closed its runtime, or a stranger connecting, cannot make anyone break a
 * live lease.
 *
 * Why sockets: a closed connection is the one death signal Node can wait on without polling
 * (no pidfd or process-exit watch on a non-child), it costs nothing while everyone lives, and it
 * works between unrelated processes of one user. Where Unix sockets are missing (Windows), or
 * the journal is `:memory:`, there is no mesh: leases then move when they expire.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, realpathSync, statSync, unlinkSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** sun_path holds 108 bytes on Linux, 104 on macOS (with the terminating NUL). */
const MAX_SOCKET_PATH = 100;
/** A socket file nobody listens on, older than this, is a dead worker's: bind and listen are microseconds apart. */
const STALE_AFTER_MS = 5_000;

export interface PeerMeshOptions {
  /** The journal file. */
  journal: string;
  /** This runtime's lease owner prefix, told to every peer. */
  owner: string;
  /** A peer's connection ended; `owner` is what it told us (undefined if it never said). */
  onPeerGone: (owner: string | undefined) => void;
}

/**
 * Where the sockets of a journal's workers live: beside the journal (by its real path, so that
 * every worker agrees however it spelled the path), or under the temp folder, named by a hash of
 * that path, if the socket paths would be too long.
 */
export function meshDirFor(journal: string): string {
  let real = journal;
  try {
    real = realpathSync(journal);
  } catch {
    // Not created yet: the path as given.
  }
  const beside = `${real}.workers`;
  if (join(beside, "0000000-00000000.sock").length <= MAX_SOCKET_PATH) return beside;
  return join(tmpdir(), `waymark-${createHash("sha256").update(real).digest("hex").slice(0, 16)}.workers`);
}

/**
 * The socket mesh of one runtime. `open()` listens and connects to the peers already there;
 * `close()` ends every connection (peers then look, and find this runtime's leases released).
 *
 * @example
 * ```ts
 * const mesh = new PeerMesh({ journal: ".waymark/journal.db", owner, onPeerGone: () => void recover() });
 * await mesh.open();
 * // …
 * await mesh.close();
 * ```
 */
export class PeerMesh {
  readonly dir: string;
  private readonly name: string;
  private server: Server | undefined;
  /** Every connection, ours to peers and theirs to us. */
  private readonly sockets = new Set<Socket>();
  /** The peers connected, by socket name (so that a rescan does not connect twice). */
  private readonly peers = new Map<string, Socket>();
  private closed = false;

  constructor(private readonly o: PeerMeshOptions) {
    this.dir = meshDirFor(o.journal);
    this.name = `${process.pid}-${o.owner.slice(-8)}.sock`;
  }

  /** False where there are no Unix sockets or no file to share. */
  static supported(journal: string): boolean {
    return process.platform !== "win32" && journal !== ":memory:" && journal !== "";
  }

  /** Listens, then connects to every peer already listening (listening first: of two workers starting at once, the later one sees the earlier). */
  async open(): Promise<void> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const server = createServer((socket) => this.adopt(socket, undefined));
    server.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(join(this.dir, this.name), () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.unref();
    this.server = server;
    await this.connectAll();
  }

  /** Connects to sockets not connected yet and removes dead workers' socket files. */
  async connectAll(): Promise<void> {
    if (this.closed || !this.server) return;
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => n.endsWith(".sock") && n !== this.name);
    } catch {
      return;
    }
    await Promise.all(names.filter((n) => !this.peers.has(n)).map((n) => this.connect(n)));
  }

  /** Ends every connection and stops listening (the socket file goes with it). */
  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.peers.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private connect(name: string): Promise<void> {
    const path = join(this.dir, name);
    return new Promise<void>((resolve) => {
      const socket = createConnection(path);
      socket.once("connect", () => {
        this.adopt(socket, name);
        resolve();
      });
      socket.once("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "ECONNREFUSED") removeIfStale(path);
        resolve();
      });
    });
  }

  /**
   * Keeps a connection (ours to a peer's socket `name`, or a peer's to us, named once it says
   * hello) and reports its end. Each side says `<socket name> <owner>` first.
   */
  private adopt(socket: Socket, name: string | undefined): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    socket.unref();
    this.sockets.add(socket);
    socket.write(`${this.name} ${this.o.owner}\n`);
    let heard = "";
    let peer: string | undefined;
    let key = name;
    if (key) this.peers.set(key, socket);
    socket.on("data", (chunk: Buffer) => {
      if (peer !== undefined || heard.length > 1_024) return;
      heard += chunk.toString("utf8");
      const end = heard.indexOf("\n");
      if (end < 0) return;
      const [peerName = "", owner = ""] = heard.slice(0, end).split(" ");
      peer = owner;
      if (!key && peerName.endsWith(".sock")) {
        key = peerName;
        if (!this.peers.has(key)) this.peers.set(key, socket);
      }
    });
    socket.on("error", () => {});
    socket.once("close", () => {
      this.sockets.delete(socket);
      if (key && this.peers.get(key) === socket) this.peers.delete(key);
      if (!this.closed) this.o.onPeerGone(peer);
    });
  }
}

function removeIfStale(path: string): void {
  try {
    if (Date.now() - statSync(path).mtimeMs > STALE_AFTER_MS) unlinkSync(path);
  } catch {
    // Gone already, or not ours to remove.
  }
}
