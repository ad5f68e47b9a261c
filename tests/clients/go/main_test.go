// Real-client check with gocql: connect, create a table, prepared insert and select, iterate.
package clientstest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

const ks = "helenus_clients_go"

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func session(t *testing.T, keyspace string) *gocql.Session {
	t.Helper()
	port, err := strconv.Atoi(env("HELENUS_PORT", "9042"))
	if err != nil {
		t.Fatalf("bad HELENUS_PORT: %v", err)
	}
	c := gocql.NewCluster(env("HELENUS_HOST", "127.0.0.1"))
	c.Port = port
	c.Keyspace = keyspace
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.Consistency = gocql.One
	c.NumConns = 1
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return s
}

func TestGocql(t *testing.T) {
	s := session(t, "")
	defer s.Close()
	for _, q := range []string{
		"DROP KEYSPACE IF EXISTS " + ks,
		"CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE " + ks + ".users (id uuid, bucket int, name text, age int, tags set<text>, PRIMARY KEY (bucket, id))",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var release string
	if err := s.Query("SELECT release_version FROM system.local").Scan(&release); err != nil {
		t.Fatalf("system.local: %v", err)
	}
	t.Logf("server release_version %s", release)

	// A second session bound to the keyspace exercises USE at connect time.
	ksess := session(t, ks)
	defer ksess.Close()

	ids := make([]gocql.UUID, 0, 50)
	for i := 0; i < 50; i++ {
		id := gocql.TimeUUID()
		ids = append(ids, id)
		// gocql prepares every query with bind markers, so this is a PREPARE then EXECUTE.
		err := ksess.Query("INSERT INTO users (bucket, id, name, age, tags) VALUES (?, ?, ?, ?, ?)",
			i%5, id, fmt.Sprintf("user%d", i), 20+i, []string{"a", fmt.Sprint(i)}).Exec()
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	for i, id := range ids {
		var name string
		var age int
		var tags []string
		err := ksess.Query("SELECT name, age, tags FROM users WHERE bucket = ? AND id = ?", i%5, id).
			Scan(&name, &age, &tags)
		if err != nil {
			t.Fatalf("select %d: %v", i, err)
		}
		if name != fmt.Sprintf("user%d", i) || age != 20+i || len(tags) != 2 {
			t.Fatalf("row %d read back wrong: %q %d %v", i, name, age, tags)
		}
	}
	// Iterate a partition with a small page size so paging is exercised too.
	iter := ksess.Query("SELECT id, name FROM users WHERE bucket = ?", 3).PageSize(3).Iter()
	n := 0
	var id gocql.UUID
	var name string
	for iter.Scan(&id, &name) {
		n++
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	if n != 10 {
		t.Fatalf("iterated %d rows in bucket 3, want 10", n)
	}
	total := 0
	iter = ksess.Query("SELECT bucket FROM users").PageSize(7).Iter()
	var b int
	for iter.Scan(&b) {
		total++
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("iterate all: %v", err)
	}
	if total != 50 {
		t.Fatalf("full scan saw %d rows, want 50", total)
	}
	if err := ksess.Query("SELECT * FROM no_such_table").Exec(); err == nil {
		t.Fatalf("query of unknown table succeeded")
	} else {
		t.Logf("unknown table error (expected): %v", err)
	}
	if err := s.Query("DROP KEYSPACE " + ks).Exec(); err != nil {
		t.Fatalf("drop keyspace: %v", err)
	}
}
