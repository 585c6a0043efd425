package core

import (
	"sync"
	"time"
)

// Service applies gpucal's rules to requests from every edge (HTTP API, CLI,
// chat) on top of a Store. Its methods authorise the Actor, validate, and
// make each change with its audit entry in one transaction.
type Service struct {
	store     Store
	policy    Policy
	now       func() time.Time
	estimator Estimator
	planner   Planner
	replanner *Replanner // the planner of Replan, which keeps what it can from one replan to the next
	nodes     NodePolicy
	alerts    AlertPolicy

	keyMu  sync.Mutex
	jobKey []byte // signs job tokens; loaded on first use (jobtoken.go)
}

// Option configures a Service.
type Option func(*Service)

// WithPolicy sets the booking rules.
func WithPolicy(p Policy) Option { return func(s *Service) { s.policy = p } }

// WithClock sets the clock; tests pin it.
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithEstimator sets how job runtimes are estimated.
func WithEstimator(e Estimator) Option { return func(s *Service) { s.estimator = e } }

// WithNodePolicy sets how the server hears from agents.
func WithNodePolicy(p NodePolicy) Option { return func(s *Service) { s.nodes = p } }

// NodePolicy returns how the server hears from agents.
func (s *Service) NodePolicy() NodePolicy { return s.nodes }

// WithPlanner sets the planner that Replan and WhatIf use.
func WithPlanner(p Planner) Option { return func(s *Service) { s.planner = p } }

// NewService returns a Service over store with DefaultPolicy, the real
// clock, estimates learned from the store's finished runs (History, which
// answers with DefaultEstimator's until it has any) and a Planner with
// DefaultPlanConfig.
func NewService(store Store, opts ...Option) *Service {
	s := &Service{store: store, policy: DefaultPolicy, now: time.Now,
		estimator: newLearner(), planner: Planner{Config: DefaultPlanConfig}, nodes: DefaultNodePolicy,
		alerts: DefaultAlertPolicy}
	for _, o := range opts {
		o(s)
	}
	s.replanner = NewReplanner(s.planner)
	return s
}

// Policy returns the booking rules in force.
func (s *Service) Policy() Policy { return s.policy }

// Now returns the service clock's current instant, in UTC, to the second.
func (s *Service) Now() time.Time { return s.now().UTC().Truncate(time.Second) }
