// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"crypto/tls"
	"net"
	"os"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	// The exporters' default compression: without a decompressor every gzip request
	// is answered Unimplemented, which the relay takes as permanent.
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// serveGRPC is the second backend, as deploy/overlays/example-backend's otlp_grpc
// exporter reaches one: OTLP/gRPC with mutual TLS and an X-API-Key header.
func (s *store) serveGRPC(tlsCfg *tls.Config) error {
	l, err := net.Listen("tcp", ":4317") //nolint:gosec // G102: the test cluster's relay pods reach this backend pod by its pod IP, so it listens on every interface
	if err != nil {
		return err
	}
	key := os.Getenv("API_KEY")
	auth := func(ctx context.Context) error {
		if key == "" {
			return nil
		}
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("x-api-key")) == 1 && md.Get("x-api-key")[0] == key {
			return nil
		}
		return status.Error(codes.Unauthenticated, "x-api-key missing or wrong")
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsCfg)))
	plogotlp.RegisterGRPCServer(gs, &grpcLogs{s: s, auth: auth})
	pmetricotlp.RegisterGRPCServer(gs, &grpcMetrics{auth: auth})
	ptraceotlp.RegisterGRPCServer(gs, &grpcTraces{auth: auth})
	return gs.Serve(l)
}

type grpcLogs struct {
	plogotlp.UnimplementedGRPCServer
	s    *store
	auth func(context.Context) error
}

func (g *grpcLogs) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	if err := g.auth(ctx); err != nil {
		return plogotlp.NewExportResponse(), err
	}
	serial := ""
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			serial = ti.State.PeerCertificates[0].SerialNumber.String()
		}
	}
	g.s.storeLogs(req, "grpc:", serial)
	return plogotlp.NewExportResponse(), nil
}

// Metrics and traces are accepted and dropped: the example backend's tests count logs.
type grpcMetrics struct {
	pmetricotlp.UnimplementedGRPCServer
	auth func(context.Context) error
}

func (g *grpcMetrics) Export(ctx context.Context, _ pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	return pmetricotlp.NewExportResponse(), g.auth(ctx)
}

type grpcTraces struct {
	ptraceotlp.UnimplementedGRPCServer
	auth func(context.Context) error
}

func (g *grpcTraces) Export(ctx context.Context, _ ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	return ptraceotlp.NewExportResponse(), g.auth(ctx)
}
