package postgres

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trit-iot/trit/store"
)

// unavailableError is an error of a server that cannot be reached or
// takes no work now: it matches store.ErrUnavailable as well as the
// driver's error, and says what the driver said.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{e.err, store.ErrUnavailable} }

// classify marks err as store.ErrUnavailable when it says the server
// cannot be reached or refuses work for now: a failed connection, a
// connection lost, a network error, a timeout while connecting, or
// SQLSTATE class 08 (connection exception) and 57P01–57P03 (shut down,
// crash shutdown, cannot connect now: starting or stopping). Other errors
// (a query's, a constraint's) are returned as they are.
func classify(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &connect), errors.As(err, &netErr), pgconn.SafeToRetry(err), pgconn.Timeout(err) && !errors.Is(err, context.Canceled):
	case errors.As(err, &pgErr) && (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"):
	default:
		return err
	}
	return &unavailableError{err}
}
