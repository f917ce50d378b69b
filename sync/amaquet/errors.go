package amaquet

import (
	"errors"
	"fmt"
)

// Code is an error code of the response envelope (SPEC section 10).
type Code string

// The error codes a server sends.
const (
	CodeBadRequest         Code = "BAD_REQUEST"
	CodeUnauthenticated    Code = "UNAUTHENTICATED"
	CodeForbidden          Code = "FORBIDDEN"
	CodeNotFound           Code = "NOT_FOUND"
	CodeUnknownCommand     Code = "UNKNOWN_COMMAND"
	CodeWrongType          Code = "WRONGTYPE"
	CodeCommandError       Code = "COMMAND_ERROR"
	CodeDuplicateRequest   Code = "DUPLICATE_REQUEST"
	CodeOverloaded         Code = "OVERLOADED"
	CodeCancelled          Code = "CANCELLED"
	CodeUnknownOpcode      Code = "UNKNOWN_OPCODE"
	CodeUnsupportedVersion Code = "UNSUPPORTED_VERSION"
	CodePayloadTooLarge    Code = "PAYLOAD_TOO_LARGE"
	CodeProtocolError      Code = "PROTOCOL_ERROR"
	CodeInternal           Code = "INTERNAL"
)

// Error is an error envelope received from the server (or, for
// PAYLOAD_TOO_LARGE, the client's own check of the server's limit).
// errors.Is(err, ErrNotFound) matches any *Error of that code, whatever
// its message.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels, one per code, for errors.Is.
var (
	ErrBadRequest         = &Error{Code: CodeBadRequest}
	ErrUnauthenticated    = &Error{Code: CodeUnauthenticated}
	ErrForbidden          = &Error{Code: CodeForbidden}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrUnknownCommand     = &Error{Code: CodeUnknownCommand}
	ErrWrongType          = &Error{Code: CodeWrongType}
	ErrCommandError       = &Error{Code: CodeCommandError}
	ErrDuplicateRequest   = &Error{Code: CodeDuplicateRequest}
	ErrOverloaded         = &Error{Code: CodeOverloaded}
	ErrCancelled          = &Error{Code: CodeCancelled}
	ErrUnknownOpcode      = &Error{Code: CodeUnknownOpcode}
	ErrUnsupportedVersion = &Error{Code: CodeUnsupportedVersion}
	ErrPayloadTooLarge    = &Error{Code: CodePayloadTooLarge}
	ErrProtocolError      = &Error{Code: CodeProtocolError}
	ErrInternal           = &Error{Code: CodeInternal}
)

// Errors of the client itself.
var (
	// ErrClosed is returned by calls on a Conn after Close.
	ErrClosed = errors.New("amaquet: connection closed")
	// ErrDisconnected matches a *ConnError: the connection was lost while
	// the call was in flight, or could not be established.
	ErrDisconnected = errors.New("amaquet: disconnected")
	// ErrIdentity is returned by Dial when the server's HELLO does not
	// prove the pinned identity (wrong key or bad signature).
	ErrIdentity = errors.New("amaquet: server identity not verified")
)

// ConnError reports a call that failed because its connection was lost
// (or could not be dialed). The Conn redials on the next call; the call
// itself may or may not have run on the server.
type ConnError struct {
	// Err is the network or protocol error that ended the connection.
	Err error
}

func (e *ConnError) Error() string { return "amaquet: disconnected: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ConnError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDisconnected) true.
func (e *ConnError) Is(target error) bool { return target == ErrDisconnected }

// opError adds the operation to err.
func opError(op string, id uint64, err error) error {
	return fmt.Errorf("amaquet: %s (request %d): %w", op, id, err)
}
