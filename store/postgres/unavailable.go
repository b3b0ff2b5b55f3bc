package postgres

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trit-iot/trit/store"
)

// markedError is a driver's error that also matches a store sentinel
// (store.ErrUnavailable, store.ErrConflict), and says what the driver
// said.
type markedError struct{ err, mark error }

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.mark} }

// classify marks err as store.ErrUnavailable when it says the server
// cannot be reached or refuses work for now: a failed connection, a
// connection lost, a network error, a timeout while connecting, or
// SQLSTATE class 08 (connection exception) and 57P01–57P03 (shut down,
// crash shutdown, cannot connect now: starting or stopping). Other errors
// (a query's, a constraint's) are returned as they are.
//
// A deadlock (40P01) or serialization failure (40001) is marked
// store.ErrConflict instead.
func classify(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrConflict) {
		return err
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	isPG := errors.As(err, &pgErr)
	switch {
	case isPG && (pgErr.Code == "40P01" || pgErr.Code == "40001"):
		return &markedError{err, store.ErrConflict}
	case errors.As(err, &connect), errors.As(err, &netErr), pgconn.SafeToRetry(err), pgconn.Timeout(err) && !errors.Is(err, context.Canceled):
	case isPG && (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"):
	default:
		return err
	}
	return &markedError{err, store.ErrUnavailable}
}
