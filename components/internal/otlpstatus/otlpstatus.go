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

// FromHTTP is the gRPC code of an HTTP status (statusutil.NewStatusFromMsgAndHTTPCode):
// grpc's HTTP mapping, except 429 and 400.
func FromHTTP(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	default:
		return codes.Unknown
	}
}

// ToHTTP is the OTLP/HTTP status a receiver answers a gRPC code with
// (errors.GetHTTPStatusCodeFromStatus): 503 and 429 are retryable, the rest not.
func ToHTTP(c codes.Code) int {
	switch c {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return http.StatusServiceUnavailable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unimplemented:
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}
