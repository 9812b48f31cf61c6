package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/qim-dev/qim/sdk"
)

// code is a qim.h error code; the values are the ABI.
type code int32

const (
	codeOK          code = 0
	codeInvalid     code = 1
	codeHandle      code = 2
	codeTimeout     code = 3
	codeClosed      code = 4
	codeServer      code = 5
	codeUnavailable code = 6
	codeInternal    code = 7
)

// apiError is an error with its qim.h code.
type apiError struct {
	code code
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(c code, format string, args ...any) error {
	return &apiError{code: c, msg: fmt.Sprintf(format, args...)}
}

// codeOf is the code of an error classify returned (codeOK for nil).
func codeOf(err error) code {
	var ae *apiError
	switch {
	case err == nil:
		return codeOK
	case errors.As(err, &ae):
		return ae.code
	}
	return codeInternal
}

// classify gives an SDK error its code. A server refusal keeps the protocol's code name first
// in the message, which is what a caller branches on after QIM_E_SERVER.
func classify(err error) error {
	var se *sdk.ServerError
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.As(err, &se):
		return errorf(codeServer, "%s: %s", se.Code, se.Message)
	case errors.Is(err, sdk.ErrInvalid):
		return errorf(codeInvalid, "%v", err)
	case errors.Is(err, sdk.ErrClosed), errors.Is(err, sdk.ErrUnauthorized), errors.Is(err, sdk.ErrKicked),
		errors.Is(err, sdk.ErrIdentity):
		return errorf(codeClosed, "%v", err)
	case errors.Is(err, sdk.ErrOffline), errors.Is(err, sdk.ErrConnected):
		return errorf(codeUnavailable, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(codeTimeout, "%v", err)
	}
	return errorf(codeInternal, "%v", err)
}
