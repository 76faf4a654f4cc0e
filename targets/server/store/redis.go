package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisKey is the Redis stream the replicas' shared journal lives in.
const RedisKey = "chaosrun:journal"

// RedisTaskKey is the Redis stream of the replicas' shared task journal.
const RedisTaskKey = "chaosrun:tasks"

// readBatch is how many records one XREAD returns at most.
const readBatch = 512

// redisJournal is a [Shared] journal in a Redis stream: XADD appends a
// record, XREAD reads the ones after the last id read. Redis persists it
// as its configuration says (chaosrun's redis-server: an fsync'd
// append-only file).
type redisJournal struct {
	c    *redis.Client
	key  string
	last string // the id of the last record read
}

// DialRedis connects to the Redis server at addr (host:port) and returns
// the shared journal in its stream key.
func DialRedis(ctx context.Context, addr, key string) (Shared, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 3})
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	return &redisJournal{c: c, key: key, last: "0-0"}, nil
}

func (r *redisJournal) Append(ctx context.Context, rec []byte) error {
	return r.c.XAdd(ctx, &redis.XAddArgs{Stream: r.key, Values: []string{"r", string(rec)}}).Err()
}

func (r *redisJournal) Read(ctx context.Context, block time.Duration, fn func([]byte) error) error {
	for {
		args := &redis.XReadArgs{Streams: []string{r.key, r.last}, Count: readBatch, Block: -1}
		if block > 0 {
			args.Block = block
		}
		res, err := r.c.XRead(ctx, args).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		n := 0
		for _, st := range res {
			for _, m := range st.Messages {
				r.last = m.ID
				n++
				v, _ := m.Values["r"].(string)
				if err := fn([]byte(v)); err != nil {
					return fmt.Errorf("record %s: %w", m.ID, err)
				}
			}
		}
		if n < readBatch {
			return nil
		}
		block = 0 // more are waiting: read them without blocking
	}
}

func (r *redisJournal) Close() error { return r.c.Close() }
