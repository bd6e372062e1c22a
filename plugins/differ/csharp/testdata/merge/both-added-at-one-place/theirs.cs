using System;

namespace Kule.Tasks
{
    public class TaskItem
    {
        private bool done;

        public TaskItem(string id)
        {
            Id = id;
        }

        public string Id { get; }

        public void Commit()
        {
            if (done)
            {
                throw new InvalidOperationException("already committed");
            }
            done = true;
        }

        [Obsolete]
        public void Reset()
        {
            done = false;
        }

        public override string ToString() => $"Task({Id})";
    }

    public static class Tasks
    {
        public static TaskItem Open(string id) => new TaskItem(id);
    }
}
