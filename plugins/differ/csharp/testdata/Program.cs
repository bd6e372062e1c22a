namespace Kule.Cli;

using System;

internal static class Program
{
    private static int Main(string[] args)
    {
        Console.WriteLine("kule");
        return 0;
    }

    private static void Usage() => Console.WriteLine("usage: kule");
}
