namespace Broken
{
    public class Fine
    {
        public int Ok() { return 1; }

        public int Broken( { return
    }

    public class After { }
}
