"""CQL native type catalogue shared by the corpus generator.

For every native type: literals in ascending Cassandra order (so clustering order and min/max are checkable
without knowing the answer up front), literals Cassandra must reject, and whether the type may sit in a
primary key. Literals are CQL text exactly as written in a statement.
"""

TYPES = {
    "ascii": (["'!'", "'A'", "'a'", "'abc'", "'z~'"], ["'\u00e9'", "1", "0x61"]),
    "bigint": (["-9223372036854775808", "-1", "0", "42", "9223372036854775807"],
               ["9223372036854775808", "'1'", "1.5"]),
    "blob": (["0x", "0x00", "0x0102", "0x02", "0xff"], ["'abc'", "1", "true"]),
    "boolean": (["false", "true"], ["1", "'yes'", "null_literal_placeholder"]),
    "date": (["'1970-01-01'", "'2000-02-29'", "'2024-12-31'", "'9999-12-31'"],
             ["'2020-13-01'", "'2021-02-29'", "'abc'", "1.5"]),
    "decimal": (["-1.5", "0", "0.001", "3.14159", "1E+10"], ["'x'", "true", "0x01"]),
    "double": (["-1.5", "0.0", "2.5", "1.7976931348623157E308"], ["'x'", "true", "0x01"]),
    "duration": (["-2d", "1h30m", "1mo2d3h", "P1Y2M", "P0001-02-03T04:05:06"], ["'x'", "1", "1h30"]),
    "float": (["-1.5", "0.0", "2.5", "3.4028235E38"], ["'x'", "true", "0x01"]),
    "inet": (["'10.0.0.1'", "'127.0.0.1'", "'192.168.1.254'", "'::1'", "'fe80::1'"],
             ["'300.1.1.1'", "1", "'localhost:80'"]),
    "int": (["-2147483648", "-1", "0", "42", "2147483647"], ["2147483648", "'1'", "1.0"]),
    "smallint": (["-32768", "-1", "0", "32767"], ["32768", "'1'", "1.5"]),
    "text": (["''", "'A'", "'a'", "'hello world'", "'\u00e9\u65e5\u672c'"], ["1", "0x00", "true"]),
    "time": (["'00:00:00'", "'08:12:54.123'", "'12:00:00.000001'", "'23:59:59.999999999'"],
             ["'24:00:00'", "'abc'", "-1"]),
    "timestamp": (["-1000", "0", "'2011-02-03 04:05+0000'", "'2020-01-01T12:34:56.789Z'", "253402300799000"],
                  ["'notatime'", "1.5", "true"]),
    "timeuuid": (["10000000-0000-1000-8000-000000000000", "50554d6e-29bb-11e5-b345-feff819cdc9f",
                  "50554d6e-29bb-11e6-b345-feff819cdc9f", "fffffffe-ffff-1fff-bfff-ffffffffffff"],
                 ["123e4567-e89b-42d3-a456-426614174000", "'x'", "1"]),
    "tinyint": (["-128", "-1", "0", "127"], ["128", "'1'", "1.5"]),
    "uuid": (["00000000-0000-0000-0000-000000000000", "123e4567-e89b-12d3-a456-426614174000",
              "50554d6e-29bb-11e5-b345-feff819cdc9f", "ffffffff-ffff-4fff-bfff-ffffffffffff"],
             ["'x'", "1", "123e4567-e89b-12d3-a456"]),
    "varchar": (["''", "'Z'", "'abc'", "'\u00fcber'"], ["1", "0x00"]),
    "varint": (["-123456789012345678901234567890", "-1", "0", "12345678901234567890123456789"],
               ["1.5", "'x'", "true"]),
}

# Extra literals worth a round trip but not part of the ordered sets (special float values, odd spellings).
EXTRA = {
    "double": ["NaN", "Infinity", "-Infinity", "-0.0", "1e-320", "4.9E-324"],
    "float": ["NaN", "Infinity", "-Infinity", "-0.0", "1.1", "1e-45"],
    "decimal": ["-0.0", "1.10", "123456789012345678901234567890.123456789", "1e-50"],
    "timestamp": ["'2020-01-01'", "'2020-01-01 10:00'", "'2020-01-01 10:00:00.5+0100'", "1577836800000"],
    "date": ["'1970-01-02'", "2147483648", "'-0001-01-01'"],
    "time": ["'00:00:00.000000001'", "3600000000000", "'1:2:3'"],
    "text": ["'it''s'", "$$dollar ' quoted$$", "'\\n'"],
    "ascii": ["'it''s'", "$$x$$"],
    "blob": ["0xCAFEBABE", "0X0A"],
    "duration": ["0s", "1y2mo3w4d5h6m7s8ms9us10ns", "PT0S", "P2W"],
    "inet": ["'::ffff:1.2.3.4'", "'2001:db8::ff00:42:8329'"],
    "uuid": ["123E4567-E89B-12D3-A456-426614174000"],
    "int": ["0x10", "-0", "+5"],
    "bigint": ["1e3", "007"],
    "varint": ["170141183460469231731687303715884105728"],
    "boolean": ["TRUE", "False"],
    "smallint": ["-0"],
    "tinyint": ["+1"],
    "timeuuid": ["50554D6E-29BB-11E5-B345-FEFF819CDC9F"],
    "varchar": ["'x y'"],
}

NUMERIC = ["tinyint", "smallint", "int", "bigint", "varint", "decimal", "float", "double"]
ORDERABLE = [t for t in TYPES if t != "duration"]
ALL = list(TYPES)


def vals(t):
    return TYPES[t][0]


def bad(t):
    return [b for b in TYPES[t][1] if b != "null_literal_placeholder"]


def shuffled(xs):
    """A fixed permutation (not sorted) so ordering is the server's job, not the insert order's."""
    if len(xs) < 3:
        return list(reversed(xs))
    mid = len(xs) // 2
    return xs[mid:][::-1] + xs[:mid]
