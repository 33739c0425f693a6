package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rotaqueue/rota/internal/store"
)

// Error codes of docs/api.md.
const (
	codeInvalidRequest       = "invalid_request"
	codeInvalidJSON          = "invalid_json"
	codeUnauthorized         = "unauthorized"
	codeTooManyRequests      = "too_many_requests"
	codeCrossOrigin          = "cross_origin"
	codeHostNotAllowed       = "host_not_allowed"
	codeNotFound             = "not_found"
	codeMethodNotAllowed     = "method_not_allowed"
	codeIllegalTransition    = "illegal_transition"
	codeLeaseLost            = "lease_lost"
	codeConflict             = "conflict"
	codePayloadTooLarge      = "payload_too_large"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeRequestTimeout       = "request_timeout"
	codeInternal             = "internal"
	codeUnavailable          = "unavailable"
)

// apiError is an error whose HTTP answer is decided where it is raised (decoding,
// validation of the protocol's own fields).
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func invalidRequest(msg string) *apiError {
	return &apiError{http.StatusBadRequest, codeInvalidRequest, msg}
}

func invalidJSON(msg string) *apiError {
	return &apiError{http.StatusBadRequest, codeInvalidJSON, msg}
}

func notFound(msg string) *apiError {
	return &apiError{http.StatusNotFound, codeNotFound, msg}
}

// prefixError puts prefix before the message of a decoding or validation error (an
// *apiError, or a store.ErrInvalid from Normalize), keeping its status and code, so that
// the message names the part of the request at fault ("tasks[3]: ", "task: ").
func prefixError(prefix string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return &apiError{ae.status, ae.code, prefix + ae.message}
	}
	return invalidRequest(prefix + err.Error())
}

// errorBody is the shape of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// serveError maps err to its answer. Store errors are matched by sentinel; their text is
// written for people and names only what the client sent, so it is shown. Anything
// else (a broken connection, a bug) is logged and answered with a bare "internal": its
// text may name hosts, SQL or internals.
func (s *Server) serveError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae.status, ae.code, ae.message)
	case errors.Is(err, store.ErrInvalid):
		writeError(w, http.StatusBadRequest, codeInvalidRequest, err.Error())
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
	case errors.Is(err, store.ErrIllegalTransition):
		writeError(w, http.StatusConflict, codeIllegalTransition, err.Error())
	case errors.Is(err, store.ErrLeaseLost):
		writeError(w, http.StatusConflict, codeLeaseLost, err.Error())
	case errors.Is(err, store.ErrConflict):
		writeError(w, http.StatusConflict, codeConflict, err.Error())
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer, and it is not a server fault.
		writeError(w, 499, codeUnavailable, "request canceled")
	default:
		s.cfg.Logger.Error("api: internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, codeInternal, "internal error")
	}
}

// writeJSON writes v as the answer. HTML escaping is off so that payloads come back
// byte for byte as the store holds them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	// An error here means the client is gone; there is nobody to tell.
	_ = enc.Encode(v)
}
