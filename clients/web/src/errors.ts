// Errors the SDK raises. Callers branch on the class and, for QimError, on code (the contract's
// error codes, generated into contract.ts); messages are for logs only.

import { ErrorCode, errorName, errorRetryable } from "./gen/contract.js";

/** QimError is an ERROR frame answering one request: the server refused it with code. */
export class QimError extends Error {
  readonly code: number;
  readonly retryable: boolean;
  /** When set (RATE_LIMITED from a rate limit, a room's slow mode or rate limit), when a retry may pass. */
  readonly retryAfterMs: number;
  /** For REJECTED: the product's reason code from its moderation hook (e.g. "spam"). */
  readonly reason: string;
  constructor(code: number, message: string, retryAfterMs = 0, reason = "") {
    super(`${errorName(code)}: ${message}`);
    this.name = "QimError";
    this.code = code;
    this.retryable = errorRetryable(code);
    this.retryAfterMs = retryAfterMs;
    this.reason = reason;
  }
  /** unknownOutcome: for a SEND, the message may or may not be committed; retry the same id. */
  get unknownOutcome(): boolean {
    return this.code === ErrorCode.UNAVAILABLE;
  }
}

/**
 * ProtocolError: the server's bytes broke the frame rules (docs/protocol.md §2). Terminal: the
 * connection is closed and never resynchronised; the client reconnects and resumes.
 */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(`protocol: ${message}`);
    this.name = "ProtocolError";
  }
}

/**
 * ConnectionClosedError: the connection ended before the request was answered. For a SEND the
 * outcome is unknown: the SDK retries it with the same client_message_id after reconnecting.
 */
export class ConnectionClosedError extends Error {
  constructor(message: string) {
    super(`connection closed: ${message}`);
    this.name = "ConnectionClosedError";
  }
}

/** SessionEndedError: the server ended the session on purpose (KICKED); reason is the raw u32. */
export class SessionEndedError extends Error {
  readonly reason: number;
  constructor(reason: number, message: string) {
    super(message);
    this.name = "SessionEndedError";
    this.reason = reason;
  }
}
