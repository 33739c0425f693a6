package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the API's contract in OpenAPI 3.1, written by hand next to the
// handlers; TestOpenAPIMatchesRoutes keeps its paths and Routes() equal.
//
//go:embed openapi.json
var openAPIDocument []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDocument)
	return nil
}
