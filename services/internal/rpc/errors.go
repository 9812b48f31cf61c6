package rpc

import (
	"errors"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// RequestError is a client-visible refusal: it carries the contract error code the gateway puts
// in the ERROR frame and a message written for the client. A service returns one for bad input
// (nothing was written) and for every decided refusal (NOT_MEMBER, CONFLICT, …).
type RequestError struct {
	Code contract.ErrorCode
	Msg  string
	// Reason is a machine-readable reason code for the client (ErrorFrame.reason): the moderation
	// hook's, on REJECTED. Empty otherwise.
	Reason string
}

func (e *RequestError) Error() string { return e.Code.String() + ": " + e.Msg }

// Refuse builds a *RequestError.
func Refuse(code contract.ErrorCode, format string, args ...any) error {
	return &RequestError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Reject builds the *RequestError of a send the moderation hook refused for reason.
func Reject(reason string) error {
	return &RequestError{Code: contract.ErrCodeRejected, Msg: "refused by the moderation hook: " + reason, Reason: reason}
}

// ReasonOf is err's reason code for the client, "" when it has none.
func ReasonOf(err error) string {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}

// ErrCorrupt marks stored state this build cannot read (a record that does not decode, an index
// entry without its record). Stores wrap it in their own sentinels; CodeOf answers INTERNAL, the
// request fails as a whole, and nothing is shown as if it were complete.
var ErrCorrupt = errors.New("corrupt stored state")

// CodeOf is the one mapping from an error to the code a client sees:
//   - a *RequestError keeps its code;
//   - corrupt state (ErrCorrupt) is INTERNAL: reported, counted, retryable once repaired;
//   - anything else is UNAVAILABLE: a dependency failed or timed out, so the outcome is unknown
//     and a retry is safe (a SEND retries with the same client_message_id).
//
// UNAVAILABLE rather than INTERNAL for the unknown case because every unclassified error on
// these paths comes from a dependency call (Redis, Kafka, a peer service); a client that gives
// up on INTERNAL would drop a send whose commit may well have happened.
func CodeOf(err error) contract.ErrorCode {
	var re *RequestError
	switch {
	case err == nil:
		return contract.ErrCodeUnspecified
	case errors.As(err, &re):
		return re.Code
	case errors.Is(err, ErrCorrupt):
		return contract.ErrCodeInternal
	}
	return contract.ErrCodeUnavailable
}

// ClientMessage is the text a client may see for err: a refusal's own message, otherwise a
// generic one for its code, so storage details and addresses never reach a client (the caller
// logs err itself).
func ClientMessage(err error) string {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Msg
	}
	switch CodeOf(err) {
	case contract.ErrCodeUnspecified:
		return ""
	case contract.ErrCodeInternal:
		return "stored state unreadable (reported); the request was refused rather than answered incompletely"
	}
	return "a dependency is unavailable; retry later (a retried SEND must reuse its client_message_id)"
}
