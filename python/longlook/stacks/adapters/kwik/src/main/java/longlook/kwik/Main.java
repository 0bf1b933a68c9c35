package longlook.kwik;

import java.util.HashMap;
import java.util.Map;

/**
 * longlook-kwik: kwik (QUIC) with flupke (HTTP/3) as a longlook stack (docs/interfaces.md,
 * "Other QUIC stacks").
 *
 * <pre>
 *   java -cp ... longlook.kwik.Main serve --listen-port 4433 --cert C --key K --root DIR --qlog-dir D
 *                                     [--retry always]
 *   java -cp ... longlook.kwik.Main fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE
 *                                     --timeout-s S --qlog-dir D [--keylog FILE]
 *                                     [--ticket-file F] [--cipher chacha20] [--version v2]
 *                                     [--key-update-after-ms MS]
 * </pre>
 * kwik has one congestion controller, NewReno. Each connection writes a JSON-SEQ qlog
 * (tech.kwik.qlog.QLogFrontEnd).
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        Map<String, String> flags = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            flags.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String command = args.length > 0 ? args[0] : "";
        int code;
        switch (command) {
            case "serve": code = Serve.run(flags); break;
            case "fetch": code = Fetch.run(flags); break;
            default:
                System.err.println("usage: longlook-kwik serve|fetch --flag value ...");
                code = 2;
        }
        if (code != 0 || command.equals("fetch")) {
            System.exit(code); // kwik's threads are not daemons
        }
    }
}
