// Live changes: a WebSocket to /api/v1/changes/live fed from the store's change sequence.
// The first frame carries the key (a browser cannot set headers on a WebSocket). On a close
// (a server restart closes with 1012) it reconnects with backoff, sending the last sequence
// number it saw, so nothing is missed; if WebSockets never work it polls /api/v1/changes.

import { get, getKey } from "./api.js";

const BACKOFF = [500, 1000, 2000, 4000, 5000];
const POLL_MS = 2000;

export class Live {
  constructor({ onChanges, onStatus, onRefused, onReconnected }) {
    this.onChanges = onChanges;
    this.onStatus = onStatus;
    this.onRefused = onRefused;
    this.onReconnected = onReconnected;
    this.cursor = null;
    this.attempt = 0;
    this.everOpened = false;
    this.stopped = true;
    this.socket = null;
    this.pollTimer = null;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.pollTimer);
    if (this.socket) this.socket.close(1000);
    this.socket = null;
    this.onStatus("offline");
  }

  connect() {
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    let socket;
    try {
      socket = new WebSocket(`${scheme}://${location.host}/api/v1/changes/live`);
    } catch {
      this.retry();
      return;
    }
    this.socket = socket;
    let hello = false;
    socket.addEventListener("open", () => {
      const first = { key: getKey() };
      if (this.cursor !== null) first.since = this.cursor;
      socket.send(JSON.stringify(first));
    });
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(event.data);
      if (message.type === "hello") {
        hello = true;
        const again = this.everOpened;
        this.everOpened = true;
        this.attempt = 0;
        if (this.cursor === null) this.cursor = message.head;
        this.onStatus("live");
        if (again) this.onReconnected();
      } else if (message.type === "error") {
        this.refusal = message.message;
      } else if ("changes" in message) {
        this.cursor = message.next;
        if (message.changes.length) this.onChanges(message);
      }
    });
    socket.addEventListener("close", (event) => {
      if (this.socket === socket) this.socket = null;
      if (this.stopped) return;
      if (event.code === 4401 || event.code === 4403) {
        this.stopped = true;
        this.onStatus("offline");
        this.onRefused(this.refusal || "the key was refused");
        return;
      }
      if (!hello && !this.everOpened && this.attempt >= 3) {
        this.poll();  // WebSockets do not get through: fall back to polling
        return;
      }
      this.retry();
    });
  }

  retry() {
    this.onStatus("reconnecting");
    const delay = BACKOFF[Math.min(this.attempt, BACKOFF.length - 1)];
    this.attempt += 1;
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  async poll() {
    if (this.stopped) return;
    try {
      if (this.cursor === null) {
        const head = await get("/api/v1/changes", { since: 0, limit: 1 });
        this.cursor = head.head;
      }
      const feed = await get("/api/v1/changes", { since: this.cursor, limit: 200 });
      this.cursor = feed.next;
      this.onStatus("polling");
      if (feed.changes.length) this.onChanges(feed);
    } catch (error) {
      if (error.status === 401 || error.status === 403) {
        this.stopped = true;
        this.onRefused(error.message);
        return;
      }
      this.onStatus("reconnecting");
    }
    this.pollTimer = setTimeout(() => this.poll(), POLL_MS);
  }
}
