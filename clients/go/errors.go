// Errors of the snowid client. Every error a method returns is an *Error
// whose Kind is one of the sentinel values below, so that callers test the
// kind with errors.Is (errors.Is(err, snowid.ErrUnavailable)) and show
// Error() to a person: it names the option, tag or endpoint and the cause.
//
// Thread-safety: the values are immutable.
package snowid

import "errors"

var (
	// ErrInvalidArgument: an option in Options, or an argument (a tag, an
	// ID), is not valid; the message names it and its rule.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrRefused: the nodes refuse this client's requests (401/403 for the
	// bearer token, 400 for the agent or the count): retrying will not help
	// until the client's settings change.
	ErrRefused = errors.New("refused")
	// ErrNotFound: the nodes do not know the segment tag (404).
	ErrNotFound = errors.New("not found")
	// ErrFailedPrecondition: the tag's state refuses a business-ID call
	// (409: the tag is retired, has no template, or its period's numbers
	// outgrew the template's width). Retrying will not help until an
	// administrator changes the tag.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: nothing was buffered and no node answered within
	// Options.EmptyWait (nodes down, slow or unable to issue).
	ErrUnavailable = errors.New("unavailable")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client closed")
)

// Error is the error every method returns: Kind is one of the sentinel
// errors above (errors.Is matches it), Message says what happened.
type Error struct {
	Kind    error
	Message string
}

func (e *Error) Error() string { return "snowid: " + e.Kind.Error() + ": " + e.Message }

// Unwrap makes errors.Is(err, e.Kind) true.
func (e *Error) Unwrap() error { return e.Kind }

func newError(kind error, message string) *Error { return &Error{Kind: kind, Message: message} }
