package io.helenus.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/** A read's options, carried to the executors. */
final class Options implements Serializable {
    private static final long serialVersionUID = 1L;

    final String host;
    final int port;
    final String keyspace;
    final String table;
    final int splits;
    final String user;
    final String password;
    final boolean https;
    final int readTimeoutMs;

    private Options(Map<String, String> m) {
        host = m.getOrDefault("host", "127.0.0.1");
        port = Integer.parseInt(m.getOrDefault("port", "10000"));
        keyspace = required(m, "keyspace");
        table = required(m, "table");
        splits = m.containsKey("splits") ? Integer.parseInt(m.get("splits")) : defaultSplits();
        user = m.get("user");
        password = m.get("password");
        https = Boolean.parseBoolean(m.getOrDefault("https", "false"));
        readTimeoutMs = Integer.parseInt(m.getOrDefault("read_timeout_ms", "600000"));
    }

    static Options of(Map<String, String> properties) {
        Map<String, String> lower = new HashMap<>();
        properties.forEach((k, v) -> lower.put(k.toLowerCase(Locale.ROOT), v));
        return new Options(lower);
    }

    private static String required(Map<String, String> m, String key) {
        String v = m.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("the helenus source needs option '" + key + "'");
        }
        return v;
    }

    private static int defaultSplits() {
        return SparkSession.getActiveSession().isDefined()
                ? SparkSession.active().sparkContext().defaultParallelism()
                : 2;
    }

    /** GET http(s)://HOST:PORT/PATH, its body on success; the server's message otherwise. */
    InputStream get(String onHost, String pathAndQuery) throws IOException {
        URL url = new URL((https ? "https" : "http") + "://" + onHost + ":" + port + pathAndQuery);
        HttpURLConnection c = (HttpURLConnection) url.openConnection();
        c.setConnectTimeout(10_000);
        c.setReadTimeout(readTimeoutMs);
        if (user != null) {
            String credentials = user + ":" + (password == null ? "" : password);
            c.setRequestProperty("Authorization", "Basic "
                    + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        }
        int status = c.getResponseCode();
        if (status != 200) {
            InputStream err = c.getErrorStream();
            String body = err == null ? "" : new String(err.readAllBytes(), StandardCharsets.UTF_8);
            throw new IOException("Helenus at " + onHost + " answered " + status + ": " + body);
        }
        return c.getInputStream();
    }

    String text(String onHost, String pathAndQuery) {
        try (InputStream in = get(onHost, pathAndQuery)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static String hex(String name) {
        return hex(name.getBytes(StandardCharsets.UTF_8));
    }

    String tablePath() {
        return "/column_scan/" + keyspace + "/" + table;
    }
}
