package pipeline

import (
	"sync"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/vocab"
)

// Trial is a policy bundle's candidate revision run as the shadow of live calls for a
// while before it may go live (gateway run --bundle-shadow,
// docs/decisions.md#bundle-shadow). It runs as a --shadow set does, layered with the
// caller's tenant layer as the live set is, and fills the records' shadow field.
type Trial struct {
	Set *gate.Set
	// Observe gets each call's decision pair once its record's shadow part is
	// decided; called from any goroutine.
	Observe func(TrialDecision)

	users sync.WaitGroup // calls whose shadow still runs on Set
}

// TrialDecision is one call's live and candidate decisions. It holds no argument or
// result value.
type TrialDecision struct {
	EventID, Tool string
	Live          vocab.Action // the record's action_taken
	LivePolicy    string       // the policy file behind the live reason; "" for none
	Shadow        audit.Shadow // the candidate's decision
}

// StartTrial runs t's set as the shadow of every call from now on, until EndTrial.
// It panics when Shadow is set (the gateway refuses --bundle-shadow with --shadow).
func (p *Pipeline) StartTrial(t *Trial) {
	if p.Shadow != nil {
		panic("pipeline: a trial with a --shadow set")
	}
	p.trialMu.Lock()
	p.trial = t
	p.trialMu.Unlock()
	p.trialOn.Store(true)
}

// EndTrial stops the running trial: no call starts on its set from now on. The
// channel it returns closes once no call runs on the set any more, so the set's gate
// may be closed, and the records of its calls are emitted; Observe is not called
// after that. A call waiting on its upstream keeps it open (up to --call-timeout).
func (p *Pipeline) EndTrial() <-chan struct{} {
	p.trialMu.Lock()
	t := p.trial
	p.trial = nil
	p.trialOn.Store(false)
	p.trialMu.Unlock()
	done := make(chan struct{})
	go func() {
		if t != nil {
			t.users.Wait()
		}
		close(done)
	}()
	return done
}

// takeTrial returns the running trial with one more user, or nil.
func (p *Pipeline) takeTrial() *Trial {
	if !p.trialOn.Load() {
		return nil
	}
	p.trialMu.Lock()
	defer p.trialMu.Unlock()
	if p.trial != nil {
		p.trial.users.Add(1)
	}
	return p.trial
}
