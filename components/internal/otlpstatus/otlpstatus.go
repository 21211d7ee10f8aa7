// SPDX-License-Identifier: Apache-2.0

// Package otlpstatus maps between OTLP/HTTP statuses and gRPC codes as the
// collector does (go.opentelemetry.io/collector/internal/statusutil and
// otlpreceiver's internal/errors, v0.165.0), which are not importable: one copy
// for the components of this module that must answer or read like upstream.
package otlpstatus // import "github.com/otelcol-relay/otelcol-relay/components/internal/otlpstatus"

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// pairs map to each other both ways in upstream's two functions; one table
// keeps a status read back as the code it was answered for.
var pairs = []struct {
	status int
	code   codes.Code
}{
	{http.StatusBadRequest, codes.InvalidArgument},
	{http.StatusUnauthorized, codes.Unauthenticated},
	{http.StatusForbidden, codes.PermissionDenied},
	{http.StatusNotFound, codes.Unimplemented},
	{http.StatusTooManyRequests, codes.ResourceExhausted},
}

// FromHTTP is the gRPC code of an HTTP status (statusutil.NewStatusFromMsgAndHTTPCode):
// grpc's HTTP mapping, except 429 and 400.
func FromHTTP(status int) codes.Code {
	for _, p := range pairs {
		if p.status == status {
			return p.code
		}
	}
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	default:
		return codes.Unknown
	}
}

// ToHTTP is the OTLP/HTTP status a receiver answers a gRPC code with
// (errors.GetHTTPStatusCodeFromStatus): 503 and 429 are retryable, the rest not.
func ToHTTP(c codes.Code) int {
	for _, p := range pairs {
		if p.code == c {
			return p.status
		}
	}
	switch c {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
