// Package inspect is what the product shows of itself to the tools that inspect a deployment:
// the Redis key families every store declares (the redis-artifacts gate classifies every key by
// them) and the log's topic layout (qimctl kafka topics creates it, the services refuse another).
// It is the one door the harness uses into the stores' declarations, which live in packages it
// cannot import, so the harness never reaches past it into the services.
package inspect
