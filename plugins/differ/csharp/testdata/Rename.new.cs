public class Config
{
    public int Port { get; set; } = 8080;

    public string Scheme { get; set; } = "https";

    public string Url() => $"{Scheme}://{Host()}:{Port}";

    public string Host() => "localhost";

    public static Config ReadConfig(string path) => new Config();

    public void Save(string path, bool atomic) { }
}
