using System;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Kule.Tasks
{
    /// <summary>A task's state.</summary>
    public enum State
    {
        Running,
        Committed,
    }

    public delegate void TaskChanged(string id, State state);

    public interface IStore<T> where T : class
    {
        T? Find(string id);
        IEnumerable<T> All();
    }

    /// <summary>
    /// One agent's work on a copy of a folder.
    /// </summary>
    [Serializable]
    [DebuggerDisplay("{Id}")]
    public sealed class TaskItem<TEffect> : IDisposable where TEffect : struct
    {
        private readonly List<TEffect> effects = new();
        private int commits, failures;

        public const int MaxFiles = 10_000;

        public event TaskChanged? Changed;

        public TaskItem(string id)
        {
            Id = id;
        }

        public TaskItem(string id, State state) : this(id)
        {
            State = state;
        }

        public string Id { get; }

        public State State { get; private set; } = State.Running;

        /// <summary>Applies the effects.</summary>
        [Obsolete("use CommitAsync")]
        public void Commit()
        {
            Commit(DateTime.UtcNow);
        }

        public void Commit(DateTime at)
        {
            State = State.Committed;
            commits++;
            Changed?.Invoke(Id, State);
        }

        public async Task<bool> CommitAsync(DateTime at, CancellationToken ct = default)
        {
            await Task.Yield();
            Commit(at);
            return true;
        }

        public bool TryGet(int index, out TEffect effect)
        {
            effect = index < effects.Count ? effects[index] : default;
            return index < effects.Count;
        }

        public TEffect this[int index] => effects[index];

        public static bool operator ==(TaskItem<TEffect> a, TaskItem<TEffect> b) => a.Id == b.Id;

        public static bool operator !=(TaskItem<TEffect> a, TaskItem<TEffect> b) => !(a == b);

        public void Dispose() { }

        ~TaskItem() { }

        public class Builder
        {
            private string id = "";

            public Builder WithId(string value)
            {
                id = value;
                return this;
            }

            public TaskItem<TEffect> Build() => new(id);
        }
    }

    public record Effect(string Path, long Size);

    public readonly struct Handle
    {
        public readonly int Value;
    }
}
