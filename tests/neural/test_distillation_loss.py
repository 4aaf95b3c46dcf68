"""Hinton's distillation loss: values and gradients against a direct computation with
F.cross_entropy and F.kl_div, a closed-form gradient, and padding that changes nothing."""
import math

import pytest
import torch
import torch.nn.functional as F

from opik_metrics.neural.lm.distillation_loss import distillation_loss, distillation_loss_parts


def oracle_loss(student, teacher, labels, temperature, alpha):
    """alpha * CE + (1 - alpha) * T^2 * KL(p_T || q_T), means over the non-padding positions."""
    keep = labels != -100
    s, t, y = student[keep].double(), teacher[keep].double(), labels[keep]
    ce = F.cross_entropy(s, y)
    kl = F.kl_div(F.log_softmax(s / temperature, -1), F.log_softmax(t / temperature, -1),
                  reduction="batchmean", log_target=True)
    return alpha * ce + (1 - alpha) * temperature ** 2 * kl


def batch(seed: int, b: int = 3, length: int = 7, vocab: int = 11, pad_from=(7, 4, 2)):
    gen = torch.Generator().manual_seed(seed)
    student = torch.randn(b, length, vocab, generator=gen) * 2
    teacher = torch.randn(b, length, vocab, generator=gen) * 2
    labels = torch.randint(0, vocab, (b, length), generator=gen)
    for row, start in enumerate(pad_from):
        labels[row, start:] = -100
    return student, teacher, labels


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0])
def test_values_and_gradients_equal_the_direct_computation(temperature, alpha):
    for seed in range(5):
        student, teacher, labels = batch(seed)
        s1 = student.clone().requires_grad_(True)
        s2 = student.clone().double().requires_grad_(True)
        got = distillation_loss(s1, teacher, labels, temperature, alpha)
        want = oracle_loss(s2, teacher, labels, temperature, alpha)
        assert got.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-6)
        got.backward()
        want.backward()
        torch.testing.assert_close(s1.grad.double(), s2.grad, rtol=1e-4, atol=1e-6)


def test_closed_form_gradient():
    """d/ds = [alpha (softmax(s) - onehot(y)) + (1 - alpha) T (softmax(s/T) - softmax(t/T))] / N."""
    temperature, alpha = 3.0, 0.25
    student, teacher, labels = batch(7)
    s = student.clone().requires_grad_(True)
    distillation_loss(s, teacher, labels, temperature, alpha).backward()
    keep = labels != -100
    n = int(keep.sum())
    onehot = F.one_hot(labels.clamp(min=0), student.shape[-1]).float()
    want = (alpha * (torch.softmax(student, -1) - onehot)
            + (1 - alpha) * temperature * (torch.softmax(student / temperature, -1)
                                           - torch.softmax(teacher / temperature, -1))) / n
    want[~keep] = 0.0
    torch.testing.assert_close(s.grad, want, rtol=1e-4, atol=1e-6)


def test_hand_worked_single_position():
    """One position, vocab 2: student (0, 0) -> q = (1/2, 1/2); teacher (0, ln 3) -> p = (1/4, 3/4).
    CE with label 1 is ln 2; KL(p || q) at T = 1 is 1/4 ln(1/2) + 3/4 ln(3/2)."""
    s = torch.tensor([[[0.0, 0.0]]])
    t = torch.tensor([[[0.0, math.log(3)]]])
    y = torch.tensor([[1]])
    kl = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    parts = distillation_loss_parts(s, t, y, temperature=1.0, alpha=0.4)
    assert parts.task_loss.item() == pytest.approx(math.log(2), rel=1e-6)
    assert parts.kd_loss.item() == pytest.approx(kl, rel=1e-6)
    assert parts.loss.item() == pytest.approx(0.4 * math.log(2) + 0.6 * kl, rel=1e-6)
    assert distillation_loss(s, t, y, 1.0, 1.0).item() == pytest.approx(math.log(2), rel=1e-6)


def test_padding_is_ignored_in_value_and_gradient():
    student, teacher, labels = batch(3)
    s = student.clone().requires_grad_(True)
    loss = distillation_loss(s, teacher, labels, 2.0, 0.5)
    loss.backward()
    pad = labels == -100
    assert (s.grad[pad] == 0).all() and (s.grad[~pad] != 0).any()
    junk_s, junk_t = student.clone(), teacher.clone()
    junk_s[pad], junk_t[pad] = 1e4, -1e4  # whatever sits under padding changes nothing
    assert distillation_loss(junk_s, junk_t, labels, 2.0, 0.5).item() == pytest.approx(loss.item(), rel=1e-6)
    # the same tokens without the padded rows give the same value
    keep = ~pad
    flat = distillation_loss(student[keep], teacher[keep], labels[keep], 2.0, 0.5)
    assert flat.item() == pytest.approx(loss.item(), rel=1e-6)


def test_teacher_gets_no_gradient():
    student, teacher, labels = batch(4)
    t = teacher.clone().requires_grad_(True)
    distillation_loss(student.requires_grad_(True), t, labels, 2.0, 0.5).backward()
    assert t.grad is None


def test_shift_takes_hf_style_labels():
    student, teacher, labels = batch(5)
    ids = labels.clamp(min=0)
    ids[labels == -100] = -100
    shifted = distillation_loss(student, teacher, ids, 2.0, 0.5, shift=True)
    manual = distillation_loss(student[:, :-1], teacher[:, :-1], ids[:, 1:], 2.0, 0.5)
    assert shifted.item() == pytest.approx(manual.item(), rel=1e-7)


def test_all_padding_gives_zero_loss_not_nan():
    student, teacher, labels = batch(6)
    s = student.clone().requires_grad_(True)
    loss = distillation_loss(s, teacher, torch.full_like(labels, -100), 2.0, 0.5)
    assert loss.item() == 0.0
    loss.backward()
    assert (s.grad == 0).all()


def test_bad_arguments_are_clear_errors():
    student, teacher, labels = batch(8)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        distillation_loss(student, teacher, labels, 0.0, 0.5)
    with pytest.raises(ValueError, match="alpha must be a number in \\[0, 1\\]"):
        distillation_loss(student, teacher, labels, 2.0, 1.5)
    with pytest.raises(ValueError, match="same shape"):
        distillation_loss(student, teacher[..., :5], labels, 2.0, 0.5)
    with pytest.raises(ValueError, match="labels \\(3, 6\\) must match"):
        distillation_loss(student, teacher, labels[:, :6], 2.0, 0.5)
