package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/ratelimit"
)

// sharedFlags are the flags for state that several replicas share
// (docs/deploy.md): the rate-limit store and the replica's name in audit records.
type sharedFlags struct {
	rateStore   string
	rateFail    string
	rateTimeout time.Duration
	replica     string
}

func (s *sharedFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&s.rateStore, "rate-limit-store", "", "keep ctx.rateLimitExceeded's hour window in Redis, shared by every replica: redis://HOST:PORT/DB (default: in this process)")
	fl.StringVar(&s.rateFail, "rate-limit-fail", ratelimit.FailOpen, "when --rate-limit-store does not answer within --rate-limit-timeout: open (the call counts as 0; the error is counted and logged) or closed (the call counts as over every limit)")
	fl.DurationVar(&s.rateTimeout, "rate-limit-timeout", 250*time.Millisecond, "longest wait for --rate-limit-store to count one call")
	fl.StringVar(&s.replica, "replica", "", "this replica's name in every audit record (default: the host name when --audit-db is PostgreSQL, else none)")
}

func (s *sharedFlags) config() gateway.Shared {
	return gateway.Shared{RateLimitStore: s.rateStore, RateLimitFail: s.rateFail, RateLimitTimeout: s.rateTimeout, Replica: s.replica}
}
