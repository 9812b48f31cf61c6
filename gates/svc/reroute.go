package svc

import "maps"

// Reroute sets one variable of process name for every later start of it, in place of the
// deployment's value: the chaos harness points a link (a writer's QIM_REDIS_ADDR, a gateway's
// QIM_WRITER_ADDRS) at a fault-injecting proxy in front of the real address. A restart by a
// fault's heal or by the supervisor keeps the route, so a link stays proxied for the whole
// cell, which an extraEnv passed to one Start would not. Call it before the process starts.
func (s *Set) Reroute(name, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routes == nil {
		s.routes = map[string]map[string]string{}
	}
	if s.routes[name] == nil {
		s.routes[name] = map[string]string{}
	}
	s.routes[name][key] = value
}

// reroute applies name's routes to its variables. Env's callers hold s.mu or run before any
// Reroute (the routes of a Set are set before its processes start), so it takes no lock.
func (s *Set) reroute(name string, vars map[string]string) {
	maps.Copy(vars, s.routes[name])
}
