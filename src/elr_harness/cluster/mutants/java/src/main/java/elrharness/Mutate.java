package elrharness;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import javassist.ClassPool;
import javassist.CtClass;
import javassist.CtMethod;

/**
 * One mutant: the method of a class in one jar of a Kafka distribution's libs/,
 * given a new body (javassist's source form: $0 this, $1.. the arguments), written
 * as a copy of that jar; then the rewritten class is loaded and initialised from
 * the copy with the rest of libs/, so the JVM verifies its bytecode.
 *
 * <pre>java -cp mutator.jar:lib/* elrharness.Mutate LIBS JAR CLASS METHOD DESCRIPTOR BODY_FILE OUT_JAR</pre>
 *
 * DESCRIPTOR is "-" when the name alone is one method. Exit 0 done, 2 the input
 * is wrong (no such jar, class, method, or a body that does not compile), 3 the
 * rewritten class fails verification. One line on stderr says why.
 */
public final class Mutate {
    private Mutate() {}

    public static void main(String[] args) {
        if (args.length != 7) {
            fail(2, "usage: Mutate LIBS JAR CLASS METHOD DESCRIPTOR|- BODY_FILE OUT_JAR");
        }
        Path libs = Path.of(args[0]);
        Path jar = libs.resolve(args[1]);
        String className = args[2];
        String method = args[3];
        String descriptor = args[4];
        Path out = Path.of(args[6]);
        try {
            String body = Files.readString(Path.of(args[5]));
            byte[] mutated = rewrite(libs, jar, className, method, descriptor, body);
            writeJar(jar, className, mutated, out);
            verify(libs, jar, out, className);
        } catch (IOException e) {
            fail(2, "cannot read or write: " + e.getMessage());
        }
    }

    static byte[] rewrite(Path libs, Path jar, String className, String method,
                          String descriptor, String body) throws IOException {
        ClassPool pool = new ClassPool(true);
        try (Stream<Path> jars = Files.list(libs)) {
            for (Path lib : jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                pool.appendClassPath(lib.toString());
            }
        } catch (javassist.NotFoundException e) {
            fail(2, "cannot read libs: " + e.getMessage());
        }
        try {
            pool.insertClassPath(jar.toString());
            CtClass cls = pool.get(className);
            CtMethod target = "-".equals(descriptor)
                ? cls.getDeclaredMethod(method)
                : cls.getMethod(method, descriptor);
            if (target.getDeclaringClass() != cls) {
                fail(2, className + " does not declare " + method + descriptor);
            }
            target.setBody(body);
            return cls.toBytecode();
        } catch (javassist.NotFoundException e) {
            fail(2, "not found in " + jar.getFileName() + ": " + e.getMessage());
        } catch (javassist.CannotCompileException e) {
            fail(2, "the new body of " + className + "." + method + " does not compile: "
                    + e.getMessage());
        }
        return null;
    }

    static void writeJar(Path jar, String className, byte[] mutated, Path out) throws IOException {
        String entryName = className.replace('.', '/') + ".class";
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        boolean replaced = false;
        try (JarFile in = new JarFile(jar.toFile());
             JarOutputStream to = new JarOutputStream(Files.newOutputStream(tmp))) {
            Enumeration<JarEntry> entries = in.entries();
            while (entries.hasMoreElements()) {
                JarEntry entry = entries.nextElement();
                to.putNextEntry(new JarEntry(entry.getName()));
                if (entry.getName().equals(entryName)) {
                    to.write(mutated);
                    replaced = true;
                } else {
                    try (InputStream from = in.getInputStream(entry)) {
                        from.transferTo(to);
                    }
                }
                to.closeEntry();
            }
        }
        if (!replaced) {
            Files.deleteIfExists(tmp);
            fail(2, jar.getFileName() + " holds no " + entryName);
        }
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** Load and initialise the class from the mutated jar, the other jars of libs/
     *  behind it: the JVM verifies the rewritten bytecode on the way. */
    static void verify(Path libs, Path original, Path mutated, String className)
            throws IOException {
        List<URL> urls = new ArrayList<>();
        urls.add(mutated.toUri().toURL());
        try (Stream<Path> jars = Files.list(libs)) {
            for (Path lib : jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                if (!lib.equals(original)) {
                    urls.add(lib.toUri().toURL());
                }
            }
        }
        try (URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), null)) {
            Class.forName(className, true, loader).getDeclaredMethods();
        } catch (VerifyError | ClassFormatError e) {
            fail(3, "the rewritten " + className + " fails verification: " + e.getMessage());
        } catch (ReflectiveOperationException | LinkageError e) {
            fail(3, "the rewritten " + className + " does not load: " + e);
        }
    }

    static void fail(int code, String message) {
        System.err.println("mutator: " + message.replace('\n', ' '));
        System.exit(code);
    }
}
