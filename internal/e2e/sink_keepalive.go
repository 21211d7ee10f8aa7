package e2e

// SetHTTPKeepAlives turns the HTTP listener's keep-alives on or off. Off closes
// idle connections at once and every other one after its current response, so
// each request makes a new connection and TLS handshake: what a backend that
// restarts or rotates its certificate does to its clients.
func (s *Sink) SetHTTPKeepAlives(on bool) { s.httpSrv.SetKeepAlivesEnabled(on) }
