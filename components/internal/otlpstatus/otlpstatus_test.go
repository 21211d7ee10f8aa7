// SPDX-License-Identifier: Apache-2.0

package otlpstatus

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
)

// Every status and code upstream's switches name, and the way each maps:
// from the status to the code, the code to the status, or both.
func TestMappingsAsUpstream(t *testing.T) {
	const from, to, both = 1, 2, 3
	for _, tc := range []struct {
		status int
		code   codes.Code
		way    int
	}{
		{http.StatusBadRequest, codes.InvalidArgument, both},
		{http.StatusUnauthorized, codes.Unauthenticated, both},
		{http.StatusForbidden, codes.PermissionDenied, both},
		{http.StatusNotFound, codes.Unimplemented, both},
		{http.StatusTooManyRequests, codes.ResourceExhausted, both},
		{http.StatusServiceUnavailable, codes.Unavailable, both},
		{http.StatusBadGateway, codes.Unavailable, from},
		{http.StatusGatewayTimeout, codes.Unavailable, from},
		{http.StatusServiceUnavailable, codes.Canceled, to},
		{http.StatusServiceUnavailable, codes.DeadlineExceeded, to},
		{http.StatusServiceUnavailable, codes.Aborted, to},
		{http.StatusServiceUnavailable, codes.OutOfRange, to},
		{http.StatusServiceUnavailable, codes.DataLoss, to},
		{http.StatusInternalServerError, codes.Unknown, both},
		{http.StatusConflict, codes.Unknown, from},
		{http.StatusInternalServerError, codes.Internal, to},
		{http.StatusInternalServerError, codes.NotFound, to},
	} {
		if got := FromHTTP(tc.status); tc.way&from != 0 && got != tc.code {
			t.Errorf("FromHTTP(%d) = %s, want %s", tc.status, got, tc.code)
		}
		if got := ToHTTP(tc.code); tc.way&to != 0 && got != tc.status {
			t.Errorf("ToHTTP(%s) = %d, want %d", tc.code, got, tc.status)
		}
	}
}
