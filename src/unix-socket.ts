import { existsSync, lstatSync, unlinkSync } from "node:fs";
import { connect, type Server } from "node:net";
import { dirname } from "node:path";

/**
 * The one way our processes listen on a Unix socket: a backend's contract listener
 * (`listen_addr: unix:/…`) and providerd's control socket. The socket file gets its mode
 * from its first instant (never world-writable, not even between bind and chmod); a file
 * left at the path by a process that died is replaced, one that a live process still
 * listens on is refused, and anything that is not a socket is never removed. Closing the
 * server removes the file (libuv unlinks a listening pipe's path on close).
 */
export interface UnixListenOptions {
  /** 0o600: the owner only; 0o660: its group too (connecting needs write permission). */
  mode: 0o600 | 0o660;
  /** Builds the refusal thrown for `message` (the caller's error code and key name). */
  refuse: (message: string) => Error;
}

export async function listenUnixSocket(server: Server, path: string, o: UnixListenOptions): Promise<void> {
  await claimSocketPath(path, o.refuse);
  const listening = new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      // libuv reports a missing directory as EACCES; say which it is.
      const why = existsSync(dirname(path)) ? (err.code ?? err.message) : `${dirname(path)} does not exist`;
      reject(o.refuse(`cannot listen on ${path}: ${why}`));
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
  });
  // Node binds a pipe synchronously inside listen() (outside cluster workers), so the
  // umask in force for this one call is what the socket file is created with, and no other
  // code of this process runs while it is narrowed.
  const umask = process.umask(0o777 & ~o.mode);
  try {
    server.listen(path);
  } finally {
    process.umask(umask);
  }
  await listening;
}

/**
 * Makes `path` free for a new listener: nothing is there, or a socket nobody answers on
 * (left by a process that died), which is removed. A live listener or a file that is not a
 * socket is refused. Between the test and the bind another process could claim the path;
 * two processes started on one path at the same instant is the operator's error, and the
 * later bind then fails with EADDRINUSE.
 */
export async function claimSocketPath(path: string, refuse: (message: string) => Error): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    throw refuse(`${path} cannot be inspected: ${code ?? String(err)}`);
  }
  if (!isSocket) throw refuse(`${path} exists and is not a socket; refusing to replace it`);
  if (await someoneListens(path, refuse))
    throw refuse(`another process is listening on ${path}; stop it or choose another path`);
  try {
    unlinkSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") throw refuse(`cannot remove the stale socket ${path}: ${code ?? String(err)}`);
  }
}

/**
 * Connects once: accepted (or a full backlog) means a live listener; refused means a stale
 * file. A local connect completes or fails at once, so there is no timer to wait on.
 */
function someoneListens(path: string, refuse: (message: string) => Error): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", (err: NodeJS.ErrnoException) => {
      socket.destroy();
      if (err.code === "ECONNREFUSED" || err.code === "ENOENT") resolve(false);
      else if (err.code === "EAGAIN") resolve(true);
      else reject(refuse(`cannot tell whether a process listens on ${path}: ${err.code ?? err.message}`));
    });
  });
}
